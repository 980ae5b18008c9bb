"""Where the README's test command spends its CPU: each test module run alone on a clean clone.

Usage: python benchmarks/test_cpu_by_module.py

Clones this repository's HEAD, runs the README's install command there (`bash install.sh`),
then runs each of tests/workflow's modules alone (`pytest -n 0`, one process: its own time
is not stretched by other workers), and tests/unit and tests/phone each as one group (with the
README's `-n auto`: many short tests, some of which wait), each with an empty compiler cache
as on a new machine. For each: the wall time, the CPU time of pytest and every process it
waited for (user + system), and pytest's summary. The sum is what a perfect split over the
CPUs could not go below; test_time.py measures the suite together. Slurm's jobs run under
slurmd, not under pytest: their CPU is not counted here. Writes
benchmarks/results/test_cpu_by_module.{md,json}. Run it on an otherwise idle machine.
"""

from __future__ import annotations

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


def groups(clone: Path) -> list[tuple[str, list[str]]]:
    """(what is run, pytest's arguments) per group."""
    modules = sorted(p.relative_to(clone) for p in (clone / "tests/workflow").glob("test_*.py"))
    return [
        *[(str(m), ["-n", "0", str(m)]) for m in modules],
        ("tests/unit", ["tests/unit"]),
        ("tests/phone", ["tests/phone"]),
    ]


def run_group(clone: Path, env: dict, work: Path, args: list[str]) -> dict:
    cache = work / "ccache"
    shutil.rmtree(cache, ignore_errors=True)
    start, cpu = time.monotonic(), children_cpu_seconds()
    proc = subprocess.run(
        ["pytest", "-p", "no:cacheprovider", "-q", "--basetemp", str(work / "tmp"), *args],
        cwd=clone,
        env={**env, "CCACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = round(time.monotonic() - start, 1)
    cpu = round(children_cpu_seconds() - cpu, 1)
    shutil.rmtree(work / "tmp", ignore_errors=True)
    lines = proc.stdout.splitlines()
    summary = next((ln for ln in reversed(lines) if re.search(r"\d+ (passed|failed)", ln)), "")
    return {
        "wall_s": seconds,
        "cpu_s": cpu,
        "exit_code": proc.returncode,
        "summary": summary.strip("= "),
    }


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="test-cpu-"))
    try:
        clone = work / "clone"
        commit, env = installed_clone_of_head(clone)
        rows = {name: run_group(clone, env, work, args) for name, args in groups(clone)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ranked = sorted(rows.items(), key=lambda item: -item[1]["cpu_s"])
    total = round(sum(r["cpu_s"] for r in rows.values()), 1)
    result = {"groups": rows, "cpu_s_total": total}
    md = [
        "# Where the test command spends its CPU, module by module",
        "",
        "`python benchmarks/test_cpu_by_module.py`: a clone of HEAD, `bash install.sh`, then each "
        "module of tests/workflow alone (`pytest -n 0`), tests/unit and tests/phone each as a "
        "group (`-n auto`), each with an empty compiler cache. CPU: user + system of pytest and "
        "every process it waited for (not Slurm's jobs, which slurmd runs).",
        "",
        f"- CPU time, all groups: **{total} s**",
        "",
        "| group | CPU s | wall s | pytest |",
        "|---|---|---|---|",
        *[f"| `{n}` | {r['cpu_s']} | {r['wall_s']} | {r['summary']} |" for n, r in ranked],
    ]
    write_results("test_cpu_by_module", result, md, clone_commit=commit)
    print("\n".join(md))
    return 0 if all(r["exit_code"] == 0 for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
