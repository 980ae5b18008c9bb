"""How long the README's test command takes on a clean clone (the goal: at most 600 s on 2 cores).

Usage: python benchmarks/test_time.py [--cold-ccache] [--workers N] [--inner-loop]

Clones this repository's HEAD into a temporary directory, runs the README's install command
there (`bash install.sh`, with this machine's own pip set-up), then the README's test command
(`pytest`) in that environment, as CI does, and times the test command alone. Writes
benchmarks/results/test_time.{md,json} (with --cold-ccache: test_time-cold-ccache.{md,json}):
the time, the test command's CPU time, what the machine's CPUs did meanwhile (busy, idle, and
stolen by a virtual machine's host: such a machine's speed drifts from run to run, and the CPU
time says how much work the suite was), the state of the compiler cache, pytest's summary line,
its 15 slowest tests, the 15 test phases that cost the most CPU (tests/conftest.py), the CPU
per test module, and the Snakemake jobs the tests' workflow runs ran, per rule. Run it on an
otherwise idle machine: the time is the machine's, not only the tests'.

The tests build llama.cpp (the control engine) from source; ccache keeps its objects between
runs on one machine (CCACHE_BASEDIR: toolchain/cmake.build_environment). `--cold-ccache` runs
with an empty cache, as on a new machine: the one llama.cpp build is then compiled in full.
Without it the run uses this machine's cache as it is, and says how many objects it held.
`--workers N` runs `pytest -n N` instead of the README's command (whose `-n auto` is
tests/conftest.py's choice), to compare worker counts; its results are test_time[-cold-ccache]
-N-workers.{md,json}. `--inner-loop` runs the developer's inner loop instead, `pytest -m "not
slow"` (docs/development.md; goal: at most 90 s), into test_time-inner-loop.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from provenance import installed_clone_of_head, write_results  # noqa: E402

from mnnrepro.devices.base import children_cpu_seconds  # noqa: E402

GOAL_S = 600
INNER_LOOP_GOAL_S = 90
INNER_LOOP = ["-m", "not slow"]
PYTEST = ["pytest", "--durations=15", "-p", "no:cacheprovider"]


def ccache_files(env: dict) -> int | None:
    """How many files the compiler cache holds (None: no ccache)."""
    if not shutil.which("ccache"):
        return None
    out = subprocess.run(
        ["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True
    ).stdout
    stats = dict(line.split("\t") for line in out.splitlines())
    return int(stats["files_in_cache"])


def listed(stdout: str, heading: str) -> list[str]:
    """The 15 lines pytest printed under a section heading (its durations), or none where it
    printed no such section."""
    if heading not in stdout:
        return []
    block = stdout.split(heading, 1)[1].splitlines()[1:16]
    return [line.strip() for line in block if line.strip()]


def largest_cpu(phases: list[dict]) -> list[str]:
    """The 15 test phases (tests/conftest.py's --cpu-times) that cost the most CPU, each as
    pytest lists a duration."""
    largest = sorted(phases, key=lambda phase: -phase["cpu_s"])[:15]
    return [f"{p['cpu_s']:.2f}s {p['when']:<8} {p['nodeid']}" for p in largest]


def by_module(phases: list[dict]) -> list[dict]:
    """The CPU seconds of every test phase (tests/conftest.py's --cpu-times) summed per test
    module, largest first, with its number of tests."""
    modules: dict[str, dict] = {}
    for phase in phases:
        module = phase["nodeid"].split("::", 1)[0]
        entry = modules.setdefault(module, {"module": module, "tests": set(), "cpu_s": 0.0})
        entry["tests"].add(phase["nodeid"])
        entry["cpu_s"] += phase["cpu_s"]
    rows = [
        {**m, "tests": len(m["tests"]), "cpu_s": round(m["cpu_s"], 1)} for m in modules.values()
    ]
    return sorted(rows, key=lambda m: -m["cpu_s"])


def jobs_by_rule(basetemp: Path) -> list[dict]:
    """The Snakemake jobs the tests' workflow runs ran, per rule, largest first: how many and
    their seconds (each job's start to end, stretched by what ran beside it), read from every
    run's .snakemake/metadata under the tests' base directory. A job writes a file there per
    output, all with its end time; a run copied into another test's directory is counted
    once."""
    jobs: dict[tuple[str, float], float] = {}
    for metadata in basetemp.rglob(".snakemake/metadata"):
        for path in metadata.iterdir():
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if record.get("starttime") is None or record.get("endtime") is None:
                continue  # an output whose job did not finish
            key = (record["rule"], round(record["endtime"], 2))
            jobs[key] = max(jobs.get(key, 0.0), record["endtime"] - record["starttime"])
    rules: dict[str, dict] = {}
    for (rule, _), seconds in jobs.items():
        entry = rules.setdefault(rule, {"rule": rule, "jobs": 0, "job_s": 0.0})
        entry["jobs"] += 1
        entry["job_s"] += seconds
    rows = [{**r, "job_s": round(r["job_s"], 1)} for r in rules.values()]
    return sorted(rows, key=lambda r: -r["job_s"])


def machine_seconds() -> dict[str, float]:
    """Seconds of all CPUs since boot (/proc/stat's first line): busy (user, nice, system,
    irq, softirq), idle (and iowait), and steal (time a virtual machine's CPUs were ready
    but its host ran something else: a slower machine for the same work)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:9]
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, fields)
    tick = os.sysconf("SC_CLK_TCK")
    return {
        "busy": (user + nice + system + irq + softirq) / tick,
        "idle": (idle + iowait) / tick,
        "steal": steal / tick,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold-ccache", action="store_true", help="an empty compiler cache")
    parser.add_argument("--workers", type=int, help="pytest -n N (default: the README's -n auto)")
    parser.add_argument("--inner-loop", action="store_true", help='pytest -m "not slow"')
    args = parser.parse_args(argv)
    cold = args.cold_ccache
    name = "test_time" + ("-cold-ccache" if cold else "")
    name += f"-{args.workers}-workers" if args.workers else ""
    name += "-inner-loop" if args.inner_loop else ""
    goal = INNER_LOOP_GOAL_S if args.inner_loop else GOAL_S
    selection = ["-n", str(args.workers)] if args.workers else []
    selection += INNER_LOOP if args.inner_loop else []
    work = Path(tempfile.mkdtemp(prefix="test-time-"))
    try:
        clone, phases = work / "clone", work / "cpu-times.json"
        basetemp = work / "tests"  # pytest's base directory: the workflow runs' metadata
        commit, env = installed_clone_of_head(clone)
        if cold:
            env["CCACHE_DIR"] = str(work / "ccache")
        cached = ccache_files(env)
        if cached is None:
            ccache = "not installed"
        elif cold:
            ccache = f"a new cache, empty at start (--cold-ccache; {cached} files)"
        else:
            ccache = f"this machine's, {cached} files at start"
        start, machine, cpu = time.monotonic(), machine_seconds(), children_cpu_seconds()
        proc = subprocess.run(
            [*PYTEST, "--cpu-times", str(phases), "--basetemp", str(basetemp), *selection],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = round(time.monotonic() - start, 1)
        cpu = round(children_cpu_seconds() - cpu, 1)  # pytest and every process it waited for
        machine = {k: round(v - machine[k], 1) for k, v in machine_seconds().items()}
        cpu_phases = json.loads(phases.read_text()) if phases.exists() else []
        rules = jobs_by_rule(basetemp)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = proc.stdout.splitlines()
    summary = next((line for line in reversed(lines) if re.search(r"\d+ passed", line)), "")
    slowest, costliest = listed(proc.stdout, "slowest 15 durations"), largest_cpu(cpu_phases)
    modules = by_module(cpu_phases)
    result = {
        "test_s": seconds,
        "goal_s": goal,
        "cpu_s": cpu,
        "machine_s": machine,
        "ccache": ccache,
        "exit_code": proc.returncode,
        "summary": summary.strip("= "),
        "slowest": slowest,
        "largest_cpu": costliest,
        "by_module": modules,
        "jobs_by_rule": rules,
        "failed": [line for line in lines if line.startswith(("FAILED", "ERROR"))],
    }
    if not summary:  # pytest ended before its summary (a collection error): say why
        result["tail"] = (proc.stdout + proc.stderr)[-3000:]
    command = " ".join(["python benchmarks/test_time.py", *argv])
    md = [
        "# The inner loop on a clean clone"
        if args.inner_loop
        else "# The README's test command on a clean clone",
        "",
        f"`{command}`: a clone of HEAD, `bash install.sh`, then `pytest`"
        + (f" -n {args.workers} (not the README's -n auto)" if args.workers else "")
        + (' -m "not slow" (the inner loop, docs/development.md)' if args.inner_loop else "")
        + " in that environment (CI's steps); the time is the test command's alone.",
        "",
        f"- time: **{seconds} s** (goal ≤ {goal} s), exit code {proc.returncode}",
        f"- CPU time of the test command: {cpu} s (user + system, its processes); the "
        f"machine's CPUs meanwhile: {machine['busy']} s busy, {machine['idle']} s idle, "
        f"{machine['steal']} s stolen by the virtual machine's host",
        f"- compiler cache (ccache): {ccache}",
        f"- pytest: {result['summary']}",
        *[f"- {line}" for line in result["failed"]],
        "",
        "Slowest tests:",
        "",
        *[f"- `{line}`" for line in slowest],
        "",
        "Largest CPU times (a test phase's own work, with the processes its worker started; the "
        "wall times above are stretched by the tests running beside them):",
        "",
        *[f"- `{line}`" for line in costliest],
        "",
        "CPU by test module (every phase of its tests, fixtures they set up included; the 20 "
        "largest, all in the JSON file):",
        "",
        "| module | tests | CPU s | share |",
        "|---|---:|---:|---:|",
        *[
            f"| `{m['module']}` | {m['tests']} | {m['cpu_s']} | {m['cpu_s'] / max(cpu, 1):.1%} |"
            for m in modules[:20]
        ],
        "",
        f"Snakemake jobs by rule ({sum(r['jobs'] for r in rules)} jobs in the tests' workflow "
        "runs; a job's seconds are its start to its end, stretched by what ran beside it; the "
        "20 largest, all in the JSON file):",
        "",
        "| rule | jobs | job s | s per job |",
        "|---|---:|---:|---:|",
        *[
            f"| `{r['rule']}` | {r['jobs']} | {r['job_s']} | {r['job_s'] / r['jobs']:.1f} |"
            for r in rules[:20]
        ],
    ]
    write_results(name, result, md, clone_commit=commit)  # it measured a clone of HEAD
    print("\n".join(md))
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
