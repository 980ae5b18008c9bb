"""The suite's CPU account (tests/conftest.py: each test phase's CPU seconds with its processes)
and benchmarks/test_time.py's sums of it per test module."""

from __future__ import annotations

import json
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


def test_snakemake_jobs_are_summed_per_rule_once_each(tmp_path):
    """A job's outputs share its end time (one job), a run copied into another test's
    directory is the same jobs (counted once), an unfinished output is not a job."""

    def output(run, name, rule, start, end):
        meta = tmp_path / run / ".snakemake" / "metadata"
        meta.mkdir(parents=True, exist_ok=True)
        record = {"rule": rule, "starttime": start, "endtime": end}
        (meta / name).write_text(json.dumps(record))

    output("a", "x1", "run_bench", 100.0, 110.0)
    output("a", "x2", "run_bench", 100.001, 110.0)  # the same job's second output
    output("a", "y", "plot", 120.0, 123.5)
    output("a", "z", "plot", 130.0, None)  # did not finish
    output("copy/a", "x1", "run_bench", 100.0, 110.0)  # the run, copied by another test
    output("b", "w", "run_bench", 200.0, 205.0)
    assert test_time.jobs_by_rule(tmp_path) == [
        {"rule": "run_bench", "jobs": 2, "job_s": 15.0},
        {"rule": "plot", "jobs": 1, "job_s": 3.5},
    ]
