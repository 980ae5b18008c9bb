"""Time the quickstart as a new user runs it: cold, no-op rerun, and rerun after deleting a table.

Usage: python benchmarks/quickstart_timing.py [--keep DIR]
Runs `snakemake --cores 4` with the default config in a fresh directory (nothing cached).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

OUT = ROOT / "benchmarks" / "results"


def snakemake(workdir: Path, *args: str) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "snakemake", "--cores", "4", "--directory", str(workdir), *args]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, proc.stdout + proc.stderr


def jobs_run(log: str) -> list[str]:
    return sorted(
        {
            line.split("Rule: ")[1].rstrip(")")
            for line in log.splitlines()
            if "Finished jobid" in line and "Rule: " in line
        }
    )


def job_seconds(log: str) -> dict[str, float]:
    """Wall seconds of each job of a run, from its log's timestamps (second resolution),
    longest first."""
    import re
    from datetime import datetime

    started, found, now = {}, {}, None
    for line in log.splitlines():
        if stamp := re.fullmatch(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]", line.strip()):
            now = datetime.strptime(" ".join(stamp[1].split()), "%a %b %d %H:%M:%S %Y")
        elif job := re.match(r"Job (\d+): ", line):
            started[job[1]] = now
        elif done := re.match(r"Finished jobid: (\d+) \(Rule: (\w+)\)", line):
            found[done[2]] = (now - started.get(done[1], now)).total_seconds()
    found.pop("all", None)
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def stop_reason(workdir: Path) -> str:
    """Where the benchmark stopped and why (summary.csv's `blocks_stop_reason`)."""
    import csv

    with open(workdir / "results" / "quickstart" / "summary.csv", newline="") as f:
        reasons = {row["blocks_stop_reason"].split(";")[0] for row in csv.DictReader(f)}
    return "; ".join(sorted(reasons))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it")
    args = parser.parse_args(argv)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="quickstart-timing-"))
    cold_s, cold_log = snakemake(workdir)
    jobs_s = job_seconds(cold_log)
    stopped = stop_reason(workdir)
    noop_s, noop_log = snakemake(workdir)
    (workdir / "results" / "quickstart" / "summary.csv").unlink()
    partial_s, partial_log = snakemake(workdir)
    result = {
        "machine": {
            "cpus": __import__("os").cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "cold_s": round(cold_s, 1),
        "noop_s": round(noop_s, 2),
        "noop_says_nothing_to_do": "Nothing to be done" in noop_log,
        "after_deleting_summary_s": round(partial_s, 1),
        "after_deleting_summary_jobs": jobs_run(partial_log),
        "cold_jobs": jobs_run(cold_log),
        "cold_job_seconds": jobs_s,
        "benchmark_stopped": stopped,
    }
    downstream = ", ".join(result["after_deleting_summary_jobs"])
    write_results(
        "quickstart_timing",
        result,
        (
            "# Quickstart timing\n\n"
            f"Machine: {result['machine']['cpus']} CPUs, {result['machine']['platform']}.\n\n"
            "| step | goal | measured |\n|---|---|---|\n"
            f"| cold `snakemake --cores 4` | ≤ 150 s | {result['cold_s']} s |\n"
            f"| no-op rerun | ≤ 3 s, nothing runs | {result['noop_s']} s, "
            f"nothing to be done: {result['noop_says_nothing_to_do']} |\n"
            f"| rerun after deleting summary.csv | only downstream jobs | "
            f"{result['after_deleting_summary_s']} s: {downstream} |\n\n"
            f"The cold run's benchmark: {stopped}. Its jobs' wall times (from its log's "
            "timestamps, to the second): "
            + ", ".join(f"{job} {sec:.0f} s" for job, sec in jobs_s.items())
            + "."
        ).splitlines(),
    )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
