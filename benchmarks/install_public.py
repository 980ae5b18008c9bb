"""The README's install from public indexes only, as on a stranger's machine, timed.

Usage: python benchmarks/install_public.py [PYTHON]   (default: Debian's /usr/bin/python3.11
if present, else python3.11)

Run it from a clean clone (it installs into fresh venvs under a temporary directory). pip's
configuration files are switched off (PIP_CONFIG_FILE=/dev/null, no PIP_FIND_LINKS, no cache),
so pip knows PyPI and, from the lock, PyPI's neighbour for Python 3.11's CPU torch, PyTorch's
CPU wheel index. Where that index cannot be reached (this workplace), a loopback index serves
the lock's own torch wheel through pip's PIP_EXTRA_INDEX_URL (the hash decides what pip
accepts); the results say which indexes pip used, as pip printed them.

Cases: the full install (`bash install.sh`), and the light install (`bash install.sh --light`)
followed by the replay of the shipped archive in that light environment.
Writes benchmarks/results/install_public.{md,json}.
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
sys.path.insert(0, str(ROOT / "tests"))

from loopback_index import public_pip_env, torch_wheel, wheel_index  # noqa: E402
from provenance import clone_of_head, write_results  # noqa: E402
from python_versions import du_mb  # noqa: E402

ARCHIVE = "benchmarks/results/host-sme2-archive.tar.gz"


def timed(argv, cwd, env) -> tuple[int, float, str]:
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, round(time.monotonic() - start, 1), proc.stdout + proc.stderr


def indexes(output: str) -> list[str]:
    found = []
    for line in re.findall(r"Looking in indexes: (.+)", output):
        for url in line.split(", "):
            if url not in found:
                found.append(url)
    return found


def case(python: str, light: bool, work: Path, env: dict) -> dict:
    clone = work / ("light" if light else "full")
    commit = clone_of_head(clone)
    argv = ["bash", "install.sh", *(["--light"] if light else [])]
    code, seconds, out = timed(argv, clone, {**env, "PYTHON": python})
    row = {
        "case": "light" if light else "full",
        "commit": commit,
        "python": subprocess.run([python, "-V"], capture_output=True, text=True).stdout.strip(),
        "install_rc": code,
        "install_s": seconds,
        "venv_mb": du_mb(clone / ".venv"),
        "indexes": indexes(out),
    }
    if code != 0:
        row["install_tail"] = out[-2000:]
        return row
    if light:
        snakemake = [str(clone / ".venv" / "bin" / "snakemake")]
        code, seconds, out = timed(
            [*snakemake, "--cores", "1", "--config", f"replay={ARCHIVE}"], clone, env
        )
        row.update(replay_rc=code, replay_s=seconds)
        if code != 0:
            row["replay_tail"] = out[-2000:]
    return row


def main(argv: list[str]) -> int:
    python = (
        argv[0]
        if argv
        else ("/usr/bin/python3.11" if Path("/usr/bin/python3.11").exists() else "python3.11")
    )
    work = Path(tempfile.mkdtemp(prefix="install-public-"))
    try:
        with wheel_index(torch_wheel(work / "wheel")) as url:
            env = public_pip_env(url)
            rows = [case(python, light, work, env) for light in (False, True)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [
        "# Install from public indexes only",
        "",
        "`python benchmarks/install_public.py`: fresh venvs, pip's configuration files and",
        "cache switched off; torch's CPU wheel (Python 3.11) from a loopback index standing in",
        "for PyTorch's CPU index (unreachable here). Indexes as pip printed them.",
        "",
        "| case | Python | install | venv | indexes | replay of the shipped archive |",
        "|---|---|---:|---:|---|---:|",
    ]
    for r in rows:
        replay = f"{r['replay_s']} s (exit {r['replay_rc']})" if "replay_s" in r else "—"
        lines.append(
            f"| {r['case']} | {r['python']} | {r['install_s']} s (exit {r['install_rc']}) | "
            f"{r['venv_mb']} MB | {', '.join(r['indexes'])} | {replay} |"
        )
    commits = {r["commit"] for r in rows}
    if len(commits) != 1:
        print(f"HEAD moved while the clones were made ({sorted(commits)}): run it again")
        return 1
    write_results("install_public", {"rows": rows}, lines, clone_commit=commits.pop())
    print("\n".join(lines))
    return 0 if all(r["install_rc"] == 0 and r.get("replay_rc", 0) == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
