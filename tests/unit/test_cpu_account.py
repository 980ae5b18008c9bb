"""The suite's CPU account (tests/conftest.py: each test phase's CPU seconds with its processes)
and benchmarks/test_time.py's sums of it per test module."""

from __future__ import annotations

import subprocess
import sys

from conftest import benchmark_script, cpu_seconds

test_time = benchmark_script("test_time")

# a child that spends half a CPU second, says so, and stays alive until its stdin closes: as
# the Snakemake server's forks (tests/snakemake_server.py) outlive the phase that used them
BUSY = """
import sys, time
while time.process_time() < 0.5:
    pass
print("spent", flush=True)
sys.stdin.read()
"""


def test_a_live_childs_cpu_is_counted_before_it_is_waited_for():
    before = cpu_seconds()
    child = subprocess.Popen(
        [sys.executable, "-c", BUSY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "spent"
        # the child still runs: nobody waited for it (/proc counts in ticks of 10 ms)
        assert cpu_seconds() - before >= 0.4
    finally:
        child.communicate("")


def test_cpu_is_summed_per_module_over_every_phase_and_test():
    phases = [
        {"nodeid": "tests/a.py::t1", "when": "setup", "cpu_s": 2.0},
        {"nodeid": "tests/a.py::t1", "when": "call", "cpu_s": 3.0},
        {"nodeid": "tests/a.py::t2", "when": "call", "cpu_s": 1.0},
        {"nodeid": "tests/b.py::t[x::y]", "when": "call", "cpu_s": 7.5},
    ]
    assert test_time.by_module(phases) == [
        {"module": "tests/b.py", "tests": 1, "cpu_s": 7.5},
        {"module": "tests/a.py", "tests": 2, "cpu_s": 6.0},
    ]
    # the page's largest phases: the JSON file's, largest first, as pytest lists durations
    assert test_time.largest_cpu(phases)[:2] == [
        "7.50s call     tests/b.py::t[x::y]",
        "3.00s call     tests/a.py::t1",
    ]
