"""When, where and at which commit a benchmark measured: a line every results file carries."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commit_state() -> tuple[str, bool]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(  # a benchmark's own outputs do not make the tree dirty
        ["git", "status", "--porcelain", "--", ".", ":(exclude)benchmarks/results"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return commit, bool(dirty)


def measured_record(of_a_clone: bool = False) -> dict:
    """When, where, at which commit and with which command: the `measured` field of every
    results JSON file (its .md file says the same in its measured-on line). of_a_clone: the
    benchmark measured a clone of HEAD, which holds no uncommitted change of this tree."""
    import sys

    commit, dirty = commit_state()
    dirty = dirty and not of_a_clone
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
    name: str, result: dict, markdown_lines: list[str], of_a_clone: bool = False
) -> None:
    """benchmarks/results/<name>.json (the numbers) and <name>.md (stamped with when, where
    and at which commit; of_a_clone: see measured_record)."""
    import json

    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    measured = measured_record(of_a_clone)
    stamped_result = {"measured": measured, **result}
    (out / f"{name}.json").write_text(json.dumps(stamped_result, indent=2) + "\n")
    title, _, rest = ("\n".join(markdown_lines) + "\n").partition("\n")
    (out / f"{name}.md").write_text(f"{title}\n\n{measured['text']}\n{rest}")
