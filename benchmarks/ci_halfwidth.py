"""CI half-width of the speedup per number of repetitions, on this machine.

Usage: python benchmarks/ci_halfwidth.py BENCH_CSV [--baseline B --treatment T]

Takes a bench.csv with many repetitions (e.g. the quickstart run with
`--config bench='{repetitions: 30, ...}'` or several merged runs) and, for n = 3 .. all,
resamples n of its blocks many times, reporting the median relative CI half-width
reached with n repetitions per variant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import stamped  # noqa: E402

from mnnrepro.stats import paired_ratio  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_csv")
    parser.add_argument("--baseline", default="one-thread")
    parser.add_argument("--treatment", default="two-threads")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument(
        "--pair",
        default="thread_num 1 -> 2",
        help="with choose_quickstart_pair.py output: which pair to use",
    )
    args = parser.parse_args(argv)
    bench = pd.read_csv(args.bench_csv)
    if "pair" in bench.columns:
        bench = bench[bench["pair"] == args.pair]
    rng = np.random.default_rng(0)
    lines = [
        "# CI half-width per number of repetitions",
        "",
        f"Source: `{args.bench_csv}`; {args.draws} random subsets of n blocks per cell; "
        "median relative half-width of the 95 % Student t CI on the log ratios.",
        "",
        "| phase | n | median half-width | 90th percentile |",
        "|---|---:|---:|---:|",
    ]
    for phase in ("prefill", "decode"):
        wide = bench[bench["phase"] == phase].pivot_table(
            index=["model", "block"], columns="variant", values="tps"
        )
        wide = wide[[args.baseline, args.treatment]].dropna()
        total = len(wide)
        for n in sorted({3, 5, 8, 10, 15, 20, total} & set(range(3, total + 1))):
            widths = []
            for _ in range(args.draws if n < total else 1):
                pick = wide.sample(n=n, random_state=int(rng.integers(1 << 31)))
                ci = paired_ratio(
                    pick[args.baseline].to_numpy(), pick[args.treatment].to_numpy(), 0.95
                )
                widths.append((ci["ci_high"] - ci["ci_low"]) / 2 / ci["ratio"])
            lines.append(
                f"| {phase} | {n} | {np.median(widths):.1%} | {np.quantile(widths, 0.9):.1%} |"
            )
    out = ROOT / "benchmarks" / "results" / "ci_halfwidth.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(stamped("\n".join(lines) + "\n"))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
