"""The fault matrix, run once and written down: every fault x stage of tests/fault_matrix.py
(the loopback ADB phone behind a real adb server, and this host; the tiny synthetic model,
made by the workflow's own model rules), what happened, the repetitions at the fault and after
the resume, and whether every promise held.

    python benchmarks/fault_matrix.py

It writes benchmarks/results/faults.{json,md}. tests/unit/test_faults.py asserts the same
cells in README's test command; this file is what README's reliability sentence cites."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(Path(__file__).parent))

import conftest  # noqa: E402
from fault_matrix import CELLS, run_cell  # noqa: E402
from provenance import write_results  # noqa: E402


def markdown(result: dict) -> list[str]:
    lines = [
        "# The fault matrix: what a misbehaving phone or engine costs a run",
        "",
        "Each fault struck once, at the stage named, on the loopback ADB phone (a real adb",
        "server; tests/loopback_adbd.py injects it) or this host, with the tiny synthetic model",
        f"and a 2-variant x {result['blocks']}-block schedule (tests/fault_matrix.py; asserted",
        "by tests/unit/test_faults.py). *Kept* compares every repetition finished when the",
        "fault struck with the same file after the resume, byte for byte; *half-written*",
        "lists files a cut write left on the host or the phone; *verdict* is the",
        "equality verdict of the pair (prefill, decode) from the resumed run's records and",
        "from the same records as if no fault had struck. Snakemake itself interrupted",
        "(Ctrl-C and kill -9 at the push and the gate, kill -9 mid-benchmark; Ctrl-C",
        "mid-benchmark) and a phone lost for good beside another phone are real Snakemake runs",
        "in tests/workflow/test_workflow_adb.py, not timed here.",
        "",
        "| fault | stage | where | what happened | reps at fault -> after | kept | "
        "half-written | schedule | attempts | verdict same | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["cells"]:
        if "reps_after" not in row:  # refused before anything ran
            lines.append(
                f"| {row['fault']} | {row['stage']} | {row['where']} | refused: "
                f"{row['outcome']} | - | - | - | - | - | - | {row['seconds']} |"
            )
            continue
        kept = "all" if not row["lost_or_changed"] else f"LOST {row['lost_or_changed']}"
        lines.append(
            f"| {row['fault']} | {row['stage']} | {row['where']} | {row['outcome']} | "
            f"{row['reps_at_fault']} -> {row['reps_after']} | {kept} | "
            f"{len(row['half_written']) or 'none'} | "
            f"{'as planned' if row['same_schedule'] else 'CHANGED'} | {row['attempts']} | "
            f"{'yes' if row['same_verdict'] else 'NO'} | {row['seconds']} |"
        )
    return lines


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        model = conftest.made_model(Path(tmp), "synth-tiny", conftest.TINY) / "mnn"
        servers = conftest.private_adb_server()
        port = next(servers)
        cells = []
        for i, cell in enumerate(CELLS):
            start = time.monotonic()
            row = run_cell(cell, Path(tmp) / f"cell{i}", port, model)
            cells.append({**row, "seconds": round(time.monotonic() - start, 1)})
        next(servers, None)
    result = {"blocks": 2, "cells": cells}
    write_results("faults", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
