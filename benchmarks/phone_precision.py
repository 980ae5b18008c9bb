"""Precision on demand for the phone: which `bench.repetitions` bounds fit a phone's noise.

Usage: python benchmarks/phone_precision.py [--sims 4000] [--invocation-s 72]

The paper's run judges three pairs (SME2 OFF vs ON, masked vs allowed, the A/A twin) in two
phases: six CIs, and precision on demand stops only when all six are narrow enough. For a
range of per-invocation noise levels (no real phone was measured here: the range is an
assumption, stated in the output), the project's own stopping rule is simulated
(mnnrepro.analysis.calibration.joint_stopping) for candidate bounds: the blocks it uses, how
often it reaches the target, the coverage where it stops, and the phone time that costs at
`--invocation-s` seconds per invocation (five invocations per block: four variants and the
A/A twin). Also: whether a target can decide the claim at all - the verdict `reproduced`
needs the whole CI of the gain inside claim +- tolerance, so the CI's half-width in gain
units (target x (1 + claim)) must be well below the tolerance. Writes
results/phone_precision.{md,json}.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

from mnnrepro.analysis.calibration import joint_stopping  # noqa: E402

NOISE_CV = (0.02, 0.03, 0.05, 0.08)  # assumed range of a phone's per-invocation noise
RULES = [
    {"min": 10, "max": 10, "target_half_width": 0.03},  # fixed 10 blocks, for comparison
    {"min": 10, "max": 30, "target_half_width": 0.03},
    {"min": 10, "max": 40, "target_half_width": 0.03},
    {"min": 10, "max": 30, "target_half_width": 0.02},
    {"min": 6, "max": 30, "target_half_width": 0.03},
]
CIS = 6  # three judged pairs x two phases
INVOCATIONS_PER_BLOCK = 5


def rule_label(rule: dict) -> str:
    return f"min {rule['min']}, max {rule['max']}, target {rule['target_half_width']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--invocation-s", type=float, default=72.0)
    args = parser.parse_args(argv)
    started = time.monotonic()
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    claims, tolerance = paper["comparison"]["claims"], paper["comparison"]["tolerance"]
    cells = {}
    for rule in RULES:
        label = rule_label(rule)
        cells[label] = {}
        for cv in NOISE_CV:
            cell = joint_stopping(
                rule["min"], rule["max"], rule["target_half_width"], cv, CIS, args.sims, seed=7
            )
            cell["phone_hours"] = round(
                cell["mean_blocks"] * INVOCATIONS_PER_BLOCK * args.invocation_s / 3600, 2
            )
            cells[label][f"{cv:.0%}"] = cell
    decidable = {
        str(target): {
            phase: round(target * (1 + claim), 3) for phase, claim in sorted(claims.items())
        }
        for target in sorted({r["target_half_width"] for r in RULES} | {0.05})
    }
    result = {
        "sims": args.sims,
        "invocation_s": args.invocation_s,
        "cis": CIS,
        "claims": claims,
        "tolerance": tolerance,
        "rules": cells,
        "gain_half_width": decidable,
        "paper_repetitions": paper["bench"]["repetitions"],
        "seconds": round(time.monotonic() - started, 1),
    }
    lines = [
        "# Precision on demand for the phone (simulation)",
        "",
        f"`python benchmarks/phone_precision.py --sims {args.sims} --invocation-s "
        f"{args.invocation_s:g}` ({result['seconds']} s). {args.sims} simulated runs per cell, "
        f"{CIS} judged CIs that must all be narrow enough (three pairs x two phases), "
        "log-normal per-invocation noise of the sd in the column heading on top of a shared "
        "per-block factor. **The noise levels are assumed, not measured: no real phone was "
        "reachable here.** Phone hours: mean blocks x 5 invocations x "
        f"{args.invocation_s:g} s (an estimate of one invocation with its cool-down and gates).",
        "",
        "## Mean blocks / share reaching the target / coverage / phone hours",
        "",
        "| rule | " + " | ".join(f"noise {cv:.0%}" for cv in NOISE_CV) + " |",
        "|---|" + "---|" * len(NOISE_CV),
    ]
    for label, by_cv in cells.items():
        row = " | ".join(
            f"{c['mean_blocks']:.1f} / {c['reached_target']:.0%} / {c['coverage']:.3f} / "
            f"{c['phone_hours']:.1f} h"
            for c in by_cv.values()
        )
        lines.append(f"| {label} | {row} |")
    lines += [
        "",
        "## Can a target decide the claim?",
        "",
        f"The verdict `reproduced` needs the whole CI of the gain inside claim +- {tolerance}; "
        "the CI's half-width in gain units is the target x (1 + claim):",
        "",
        "| target | " + " | ".join(sorted(claims)) + " |",
        "|---|" + "---|" * len(claims),
    ]
    for target, by_phase in decidable.items():
        row = " | ".join(f"+-{by_phase[p]:.3f}" for p in sorted(claims))
        lines.append(f"| {target} | {row} |")
    lines += [
        "",
        f"config/paper.yaml's `bench.repetitions`: {rule_label(paper['bench']['repetitions'])}"
        if isinstance(paper["bench"]["repetitions"], dict)
        else f"config/paper.yaml's `bench.repetitions`: {paper['bench']['repetitions']}",
    ]
    write_results("phone_precision", result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
