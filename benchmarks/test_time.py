"""How long the README's test command takes on a clean clone (the goal: at most 600 s on 2 cores).

Usage: python benchmarks/test_time.py

Clones this repository's HEAD into a temporary directory, runs the README's install command
there (`bash install.sh`, with this machine's own pip set-up), then the README's test command
(`pytest`) in that environment, as CI does, and times the test command alone. Writes
benchmarks/results/test_time.{md,json}: the time, pytest's summary line and its 15 slowest
tests. Run it on an otherwise idle machine: the time is the machine's, not only the tests'.
"""

from __future__ import annotations

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

from provenance import write_results  # noqa: E402

GOAL_S = 600


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="test-time-"))
    try:
        clone = work / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["bash", "install.sh"], cwd=clone, check=True, capture_output=True)
        venv_bin = clone / ".venv" / "bin"
        env = {
            **os.environ,
            "PATH": f"{venv_bin}:{os.environ['PATH']}",
            "VIRTUAL_ENV": str(venv_bin.parent),
        }
        start = time.monotonic()
        proc = subprocess.run(
            ["pytest", "--durations=15", "-p", "no:cacheprovider"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = round(time.monotonic() - start, 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = proc.stdout.splitlines()
    summary = next((line for line in reversed(lines) if re.search(r"\d+ passed", line)), "")
    slowest = []
    if "slowest 15 durations" in proc.stdout:
        block = proc.stdout.split("slowest 15 durations", 1)[1].splitlines()[1:16]
        slowest = [line.strip() for line in block if line.strip()]
    result = {
        "test_s": seconds,
        "goal_s": GOAL_S,
        "exit_code": proc.returncode,
        "summary": summary.strip("= "),
        "slowest": slowest,
        "failed": [line for line in lines if line.startswith(("FAILED", "ERROR"))],
    }
    if not summary:  # pytest ended before its summary (a collection error): say why
        result["tail"] = (proc.stdout + proc.stderr)[-3000:]
    md = [
        "# The README's test command on a clean clone",
        "",
        "`python benchmarks/test_time.py`: a clone of HEAD, `bash install.sh`, then `pytest`",
        "in that environment (CI's steps); the time is the test command's alone.",
        "",
        f"- time: **{seconds} s** (goal ≤ {GOAL_S} s), exit code {proc.returncode}",
        f"- pytest: {result['summary']}",
        *[f"- {line}" for line in result["failed"]],
        "",
        "Slowest tests:",
        "",
        *[f"- `{line}`" for line in slowest],
    ]
    write_results("test_time", result, md)
    print("\n".join(md))
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
