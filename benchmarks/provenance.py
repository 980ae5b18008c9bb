"""When, where and at which commit a benchmark measured: a line every results file carries."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def head_commit(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()


def clone_of_head(dest: Path) -> str:
    """A clone of this repository's HEAD at dest; the commit it holds (HEAD may move while a
    benchmark runs: the clone's commit is the one measured)."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    return head_commit(dest)


def installed_clone_of_head(dest: Path) -> tuple[str, dict]:
    """A clone of HEAD at dest with the README's install command run in it, as CI does (`bash
    install.sh`, with this machine's pip set-up): (the commit it holds, the environment that
    runs the clone's venv first)."""
    commit = clone_of_head(dest)
    subprocess.run(["bash", "install.sh"], cwd=dest, check=True, capture_output=True)
    venv_bin = dest / ".venv" / "bin"
    env = {
        **os.environ,
        "PATH": f"{venv_bin}:{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv_bin.parent),
    }
    return commit, env


def commit_state() -> tuple[str, bool]:
    commit = head_commit(ROOT)
    dirty = subprocess.run(  # a benchmark's own outputs do not make the tree dirty
        ["git", "status", "--porcelain", "--", ".", ":(exclude)benchmarks/results"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return commit, bool(dirty)


def measured_record(clone_commit: str | None = None) -> dict:
    """When, where, at which commit and with which command: the `measured` field of every
    results JSON file (its .md file says the same in its measured-on line). clone_commit: the
    benchmark measured a clone (clone_of_head) holding that commit and no uncommitted change
    of this tree."""
    import sys

    of_a_clone = clone_commit is not None
    commit, dirty = (clone_commit, False) if of_a_clone else commit_state()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}"
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    return {
        "date": when,
        "machine": machine,
        "commit": commit,
        "dirty": dirty,
        "of_a_clone": of_a_clone,
        "command": " ".join(["python", str(shown), *sys.argv[1:]]),
        "text": f"Measured {when} on {machine}, commit {commit}"
        + (" (dirty)" if dirty else " (a clone of it)" if of_a_clone else "")
        + ".",
    }


def measured_on() -> str:
    return measured_record()["text"]


def stamped(markdown: str) -> str:
    """markdown with the measured-on line after its title."""
    title, _, rest = markdown.partition("\n")
    return f"{title}\n\n{measured_on()}\n{rest}"


def write_results(
    name: str, result: dict, markdown_lines: list[str], clone_commit: str | None = None
) -> None:
    """benchmarks/results/<name>.json (the numbers) and <name>.md (stamped with when, where
    and at which commit; clone_commit: see measured_record)."""
    import json

    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    measured = measured_record(clone_commit)
    stamped_result = {"measured": measured, **result}
    (out / f"{name}.json").write_text(json.dumps(stamped_result, indent=2) + "\n")
    title, _, rest = ("\n".join(markdown_lines) + "\n").partition("\n")
    (out / f"{name}.md").write_text(f"{title}\n\n{measured['text']}\n{rest}")
