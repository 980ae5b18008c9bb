"""When, where and at which commit a benchmark measured: a line every results file carries."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measured_on() -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(  # a benchmark's own outputs do not make the tree dirty
        ["git", "status", "--porcelain", "--", ".", ":(exclude)benchmarks/results"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"Measured {when} on {os.cpu_count()} CPUs, {platform.platform()}, Python "
        f"{platform.python_version()}, commit {commit}{' (dirty)' if dirty else ''}."
    )


def stamped(markdown: str) -> str:
    """markdown with the measured-on line after its title."""
    title, _, rest = markdown.partition("\n")
    return f"{title}\n\n{measured_on()}\n{rest}"


def write_results(name: str, result: dict, markdown_lines: list[str]) -> None:
    """benchmarks/results/<name>.json (the numbers) and <name>.md (stamped with when, where
    and at which commit)."""
    import json

    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"{name}.md").write_text(stamped("\n".join(markdown_lines) + "\n"))
