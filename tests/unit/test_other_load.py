"""Other work on the host during an invocation is measured, the invocation's own is not."""

from __future__ import annotations

import subprocess
import sys

from mnnrepro.devices.base import other_load, run_process

SPIN = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass"
WORK = "n = 0\nfor i in range({n}): n += i"  # a fixed amount of CPU work, however busy the host


def spin(seconds: float) -> list[str]:
    return [sys.executable, "-c", SPIN.format(s=seconds)]


def test_the_commands_own_cpu_time_is_measured_and_not_counted_as_other_load():
    """Holds on a busy machine too: the work is a fixed count, not a wall-clock spin, and the
    accounting is checked on the numbers the run itself measured."""
    result = run_process(
        ["work"], [sys.executable, "-c", WORK.format(n=10_000_000)], 120, None, None
    )
    assert result.ok and result.other_load is not None
    assert result.own_cpu_s > 0.2  # ten million additions: the command's own CPU time
    # other load is the host's busy time minus the command's own, per second of wall time
    assert other_load(busy_cpu_s=3.0, own_cpu_s=1.5, seconds=1.5) == 1.0
    assert other_load(busy_cpu_s=1.4, own_cpu_s=1.5, seconds=1.5) == 0.0  # never negative


def test_a_busy_neighbour_shows_as_other_load():
    """A real process spinning on another CPU while the command runs: about one CPU."""
    neighbour = subprocess.Popen(spin(30))
    try:
        result = run_process(["sleep"], ["sleep", "1.5"], 30, None, None)
    finally:
        neighbour.kill()
        neighbour.wait()
    assert result.other_load > 0.6
