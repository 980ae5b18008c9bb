"""Install from the lock and run the unit tests on each supported Python.

Usage: python benchmarks/python_versions.py [PYTHON ...]   (default: pyenv's 3.12 and 3.13)

For each interpreter: `PYTHON=<python> VENV=<fresh dir> bash install.sh` (the README's install
command: a venv, the hash-checked lock of that Python, then the package), then `python -m
pytest tests/unit -q` with that venv's Python. pip uses this machine's own configuration (on
the reference machine: local mirrors of PyPI); the indexes pip printed are recorded. For an
install from public indexes only, see install_public.py. Run it from a clean clone (it
installs the clone).
Writes results/python_versions.{md,json}: exit codes, install and test times, venv sizes,
and the pytest summary line.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import platform
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


def timed(argv, **kw) -> tuple[int, float, str]:
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    return proc.returncode, round(time.monotonic() - start, 1), proc.stdout + proc.stderr


def du_mb(path: Path) -> int:
    """Size of a tree in MB (files, not the links a venv has to its Python)."""
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) >> 20
    )


def check(python: str, work: Path) -> dict:
    venv = work / f"venv-{Path(python).parent.parent.name}"
    py = str(venv / "bin" / "python")
    version = subprocess.run([python, "-V"], capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "PYTHON": python, "VENV": str(venv)}
    code, install_s, out = timed(["bash", "install.sh"], cwd=ROOT, env=env)
    row = {"python": version, "install_rc": code, "install_s": install_s, "venv_mb": du_mb(venv)}
    row["indexes"] = sorted(set(re.findall(r"Looking in indexes: (.+)", out))) or ["PyPI"]
    if code != 0:
        row["install_tail"] = out[-2000:]
        return row
    code, test_s, out = timed(
        [py, "-m", "pytest", "tests/unit", "-q", "-rf", "-p", "no:cacheprovider"], cwd=ROOT
    )
    summary = [line for line in out.splitlines() if " passed" in line or " failed" in line]
    failed = [line.split()[1] for line in out.splitlines() if line.startswith("FAILED ")]
    row.update(
        tests_rc=code,
        tests_s=test_s,
        tests_summary=summary[-1] if summary else out[-500:],
        tests_failed=failed,
    )
    return row


def main(argv: list[str]) -> int:
    pythons = argv or sorted(glob.glob("/root/.pyenv/versions/3.1[23].*/bin/python3"))
    work = Path(tempfile.mkdtemp(prefix="pyversions-"))
    try:
        rows = [check(python, work) for python in pythons]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    earlier = ROOT / "benchmarks" / "results" / "python_versions.json"
    if earlier.is_file():  # rows of other Pythons measured earlier are kept, with their date
        done = {r["python"] for r in rows}
        rows += [r for r in json.loads(earlier.read_text())["rows"] if r["python"] not in done]
    rows.sort(key=lambda r: r["python"])
    for r in rows:
        r.setdefault("measured", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"))
    result = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {platform.system()} {platform.release()}",
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "rows": rows,
    }
    lines = [
        "# Install from the lock and unit tests per Python (benchmarks/python_versions.py)",
        "",
        f"{result['date']}, {result['machine']}, commit {result['commit'][:10]}, in a clean "
        "clone: a fresh venv per Python, `PYTHON=<venv python> bash install.sh`, then "
        "`python -m pytest tests/unit -q`.",
        "",
        "| Python | install | install time | venv | unit tests | test time |",
        "|---|---|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['python']} | {'ok' if r['install_rc'] == 0 else 'FAILED'} | {r['install_s']} s "
            f"| {r['venv_mb']} MB | {r.get('tests_summary', '-')} | {r.get('tests_s', '-')} s |"
        )
    write_results("python_versions", result, lines)
    print("\n".join(lines))
    return 0 if all(r["install_rc"] == 0 and r.get("tests_rc") == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
