"""Calibration of the statistics by simulation: coverage of the speedup CI (t vs bootstrap), the
A/A rule's false-invalid and detection rates, and coverage after precision-on-demand stopping.

Usage: python benchmarks/ci_coverage.py [--sims 10000]

Uses the project's own functions (mnnrepro.analysis.calibration, .stats); noise models are
described there. Writes results/ci_coverage.{md,json}.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

from mnnrepro.analysis.calibration import (  # noqa: E402
    NOISE,
    aa_invalid_rate,
    coverage,
    stopping_coverage,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=10000)
    args = parser.parse_args(argv)
    started = time.monotonic()
    sims = args.sims
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.system()} {platform.release()}",
        "sims": sims,
        "coverage": {
            method: {
                str(n): {noise: coverage(method, n, noise, sims, seed=n) for noise in NOISE}
                for n in (6, 10, 20)
            }
            for method in ("t", "bootstrap")
        },
        "aa": {
            f"cv {cv:.0%}, margin {margin}": {
                "false_invalid_no_drift": aa_invalid_rate(10, 0.0, margin, sims, 1, cv),
                "caught_10pct_drift": aa_invalid_rate(10, 0.10, margin, sims, 2, cv),
            }
            for cv in (0.01, 0.02, 0.03, 0.05)
            for margin in (0.05, 0.1)
        },
        "stopping": {
            f"min {n_min}, max 40, target {target}": {
                noise: stopping_coverage(n_min, 40, target, noise, sims, seed=3) for noise in NOISE
            }
            for n_min in (4, 6, 10)
            for target in (0.02, 0.03, 0.05)
        },
        "stopping_usual_df": {
            f"min {n_min}, max 40, target {target}": {
                noise: stopping_coverage(n_min, 40, target, noise, sims, 3, first_look_df=False)
                for noise in NOISE
            }
            for n_min in (4, 6, 10)
            for target in (0.02, 0.03, 0.05)
        },
    }
    result["seconds"] = round(time.monotonic() - started, 1)
    lines = [
        "# Calibration of the statistics (simulation)",
        "",
        f"{result['date']}, {result['machine']}; `python benchmarks/ci_coverage.py --sims "
        f"{sims}` ({result['seconds']} s). {sims} simulated experiments per cell, true speedup "
        "1.3, per-invocation noise sd 5 % unless said; noise models in "
        "`workflow/scripts/mnnrepro/analysis/calibration.py`.",
        "",
        "## Coverage of the 95 % CI of the speedup (fixed number of blocks)",
        "",
        "| interval | blocks | " + " | ".join(NOISE) + " |",
        "|---|---:|" + "---:|" * len(NOISE),
    ]
    for method, by_n in result["coverage"].items():
        for n, cells in by_n.items():
            row = " | ".join(f"{cells[noise]:.3f}" for noise in NOISE)
            lines.append(f"| {method} | {n} | {row} |")
    lines += [
        "",
        "## A/A rule: both phases' CI within +-margin (10 blocks, log-normal noise)",
        "",
        "| noise, margin | invalid without drift | invalid with a 10 % drift |",
        "|---|---:|---:|",
    ]
    for key, cells in result["aa"].items():
        lines.append(
            f"| {key} | {cells['false_invalid_no_drift']:.3f} | {cells['caught_10pct_drift']:.3f} |"
        )
    lines += [
        "",
        "## Precision on demand: coverage where the run stopped (and mean blocks used)",
        "",
        "| rule | " + " | ".join(NOISE) + " |",
        "|---|" + "---|" * len(NOISE),
    ]
    for title, part in (
        ("t quantile of min - 1 df (what the summary uses)", "stopping"),
        ("usual t quantile, n - 1 df (not used: shown for its cost)", "stopping_usual_df"),
    ):
        lines += ["", f"{title}:", ""] if part != "stopping" else []
        if part != "stopping":
            lines += ["| rule | " + " | ".join(NOISE) + " |", "|---|" + "---|" * len(NOISE)]
        for key, cells in result[part].items():
            row = " | ".join(
                f"{cells[n]['coverage']:.3f} ({cells[n]['mean_blocks']:.1f})" for n in NOISE
            )
            lines.append(f"| {key} | {row} |")
    write_results("ci_coverage", result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
