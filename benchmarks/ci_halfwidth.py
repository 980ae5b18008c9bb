"""CI half-width of the speedup per number of repetitions, on this machine.

Usage: python benchmarks/ci_halfwidth.py BENCH_CSV [--baseline B --treatment T]

Takes a bench.csv with many repetitions (e.g. the quickstart run with
`--config bench='{repetitions: 30, ...}'` or several merged runs) and, for n = 3 .. all,
resamples n of its blocks many times, reporting the median relative CI half-width
reached with n repetitions per variant. The bench.csv it read is committed beside its results
(benchmarks/results/ci_halfwidth-bench.csv, its sha256 in ci_halfwidth.json), so every figure
can be recomputed from it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

from mnnrepro.files import sha256_file  # noqa: E402
from mnnrepro.stats import Interval, paired_ratio  # noqa: E402

T_95 = Interval("t", 0.95, None, 0, 0)  # the summary's default: Student t at 95 %


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
    source = ROOT / "benchmarks" / "results" / "ci_halfwidth-bench.csv"
    if Path(args.bench_csv).resolve() != source:
        shutil.copyfile(args.bench_csv, source)
    bench = pd.read_csv(source)
    if "pair" in bench.columns:
        bench = bench[bench["pair"] == args.pair]
    rng = np.random.default_rng(0)
    lines = [
        "# CI half-width per number of repetitions",
        "",
        f"Source: `benchmarks/results/ci_halfwidth-bench.csv` (sha256 {sha256_file(source)}, "
        f"copied from `{args.bench_csv}`); {args.draws} random subsets of n blocks per cell; "
        "median relative half-width of the 95 % Student t CI on the log ratios.",
        "",
        "| phase | n | median half-width | 90th percentile |",
        "|---|---:|---:|---:|",
    ]
    rows = []
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
                    pick[args.baseline].to_numpy(), pick[args.treatment].to_numpy(), T_95
                )
                widths.append((ci["ci_high"] - ci["ci_low"]) / 2 / ci["ratio"])
            median, p90 = float(np.median(widths)), float(np.quantile(widths, 0.9))
            rows.append({"phase": phase, "n": n, "median": median, "p90": p90})
            lines.append(f"| {phase} | {n} | {median:.1%} | {p90:.1%} |")
    result = {"source": source.name, "source_sha256": sha256_file(source), "rows": rows}
    write_results("ci_halfwidth", result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
