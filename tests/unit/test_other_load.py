"""Other work on the host during an invocation is measured, the invocation's own is not."""

from __future__ import annotations

import subprocess
import sys

from mnnrepro.device import run_process

SPIN = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass"


def spin(seconds: float) -> list[str]:
    return [sys.executable, "-c", SPIN.format(s=seconds)]


def test_the_commands_own_cpu_time_is_not_other_load():
    result = run_process(["spin"], spin(1.5), 30, None, None)
    assert result.ok and result.other_load is not None
    assert result.other_load < 0.5  # it kept one CPU busy itself


def test_a_busy_neighbour_shows_as_other_load():
    """A real process spinning on another CPU while the command runs: about one CPU."""
    neighbour = subprocess.Popen(spin(30))
    try:
        result = run_process(["sleep"], ["sleep", "1.5"], 30, None, None)
    finally:
        neighbour.kill()
        neighbour.wait()
    assert result.other_load > 0.6
