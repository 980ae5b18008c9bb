"""The quickstart's decode speed against its decode ceiling on this machine.

Usage: python benchmarks/decode_ceiling.py [--from DIR]
Runs the quickstart (`snakemake --cores 4`, default config) in a fresh directory, or reads an
existing run in DIR (e.g. `benchmarks/quickstart_timing.py --keep DIR`), and records each
variant's decode tok/s, the bytes a decode step reads, the measured read bandwidth (every
sample) and the share of the ceiling reached: benchmarks/results/decode_ceiling.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="an existing quickstart run")
    args = parser.parse_args(argv)
    workdir = args.source or Path(tempfile.mkdtemp(prefix="decode-ceiling-"))
    if args.source is None:
        cmd = [sys.executable, "-m", "snakemake", "--cores", "4", "--directory", str(workdir)]
        subprocess.run(cmd, cwd=ROOT, check=True)
    out = workdir / "results" / "quickstart"
    table = pd.read_csv(out / "mechanism.csv")
    bandwidth = json.loads((out / "bandwidth" / "host.json").read_text())
    checks = json.loads((out / "mechanism.json").read_text())["checks"]
    result = {
        "bandwidth": [
            {
                "buffer_mib": bandwidth["buffer_mib"],
                "threads": m["threads"],
                "samples_gb_per_s": [s["gb_per_s"] for s in m["samples"]],
                "median_gb_per_s": m["median_gb_per_s"],
                "compiler": m["compiler"]["version"],
            }
            for m in bandwidth["measurements"]
        ],
        "variants": table.to_dict(orient="records"),
        "checks": checks,
    }
    lines = [
        "# The quickstart's decode ceiling on this machine",
        "",
        "`python benchmarks/decode_ceiling.py` (the quickstart, `snakemake --cores 4`). Bytes "
        "per decode token: the rule in `workflow/scripts/mnnrepro/models/mnn_layout.py`. Read "
        f"bandwidth (bandwidth_probe, a {bandwidth['buffer_mib']} MiB buffer):",
        "",
        "| threads | samples | median GB/s | min | max |",
        "|---:|---:|---:|---:|---:|",
    ]
    for b in result["bandwidth"]:
        rates = b["samples_gb_per_s"]
        lines.append(
            f"| {b['threads']} | {len(rates)} | {b['median_gb_per_s']:.1f} | "
            f"{min(rates):.1f} | {max(rates):.1f} |"
        )
    lines += [
        "",
        "Each variant's ceiling uses the bandwidth at its own thread count.",
        "",
        "| variant | decode tok/s | MB / token | GB/s (threads) | ceiling tok/s | share of "
        "ceiling | prefill tok/s | prefill GOPS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["variants"]:
        lines.append(
            f"| {r['variant']} | {r['decode_tps']:.2f} | {r['decode_bytes_per_token'] / 1e6:.0f} "
            f"| {r['bandwidth_gb_per_s']:.1f} ({r['bandwidth_threads']}) | "
            f"{r['decode_ceiling_tps']:.1f} | {r['decode_ceiling_share']:.0%} | "
            f"{r['prefill_tps']:.1f} | {r['prefill_gops']:.1f} |"
        )
    lines += ["", "Mechanism checks of that run:", ""]
    lines += [f"- {c['check']}: **{c['status']}** ({c['evidence']})" for c in checks]
    write_results("decode_ceiling", result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
