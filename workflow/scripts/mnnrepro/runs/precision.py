"""Precision on demand: how many interleaved blocks a benchmark runs.

`bench.repetitions` is a number (exactly that many blocks) or {min, max, target_half_width}:
after `min` blocks, and after every further block, the CI of every judged pair (the compared
pairs and the A/A control) is computed in both phases from the raw records measured so far,
exactly as the summary will compute it (Student t on the log ratios, with the quantile of the
first look, stats.stopping_df); the run stops when every half-width is at most the target, or
after `max` blocks. The decision is a function of the raw records, so a resumed run makes the
same decision. Simulated coverage of this rule: benchmarks/results/ci_coverage.md."""

from __future__ import annotations

import numpy as np

from mnnrepro.stats import PHASES, block_range, ci_df, t_interval


def half_widths(records: list[dict], pairs, ci_level: float, df: int | None) -> dict[str, float]:
    """'baseline/treatment phase' -> relative CI half-width over the blocks measured so far."""
    tps = {}
    for record in records:
        if record.get("status") != "ok":
            continue
        for r in record["results"]:
            tps[(record["variant"], r["phase"], record["invocation"]["block"])] = r["tps"]
    out = {}
    for baseline, treatment in pairs:
        for phase in PHASES:
            blocks = sorted(
                b
                for (v, p, b) in tps
                if v == baseline and p == phase and (treatment, phase, b) in tps
            )
            if len(blocks) < 2:
                out[f"{baseline}/{treatment} {phase}"] = float("inf")
                continue
            log_ratio = np.log(
                [tps[(treatment, phase, b)] / tps[(baseline, phase, b)] for b in blocks]
            )
            low, high = t_interval(log_ratio, ci_level, df)
            ratio = float(np.exp(log_ratio.mean()))
            out[f"{baseline}/{treatment} {phase}"] = float((high - low) / 2 / ratio)
    return out


def stopping_decision(records, blocks: int, repetitions, pairs, ci_level: float) -> dict | None:
    """After `blocks` complete blocks: None to go on, else why the run stops here."""
    n_min, n_max, target = block_range(repetitions)
    if target is None:
        return {"blocks": blocks, "reason": "fixed repetitions"} if blocks >= n_max else None
    if blocks < n_min:
        return None
    widths = half_widths(records, pairs, ci_level, ci_df(repetitions))
    if all(w <= target for w in widths.values()):
        reason = f"target half-width {target:.1%} reached"
    elif blocks >= n_max:
        reason = f"max {n_max} blocks reached before the target half-width {target:.1%}"
    else:
        return None
    return {"blocks": blocks, "reason": reason, "target": target, "half_widths": widths}
