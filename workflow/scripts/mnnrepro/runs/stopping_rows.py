"""The rows a stopping rule judges (a pair's phase, or the mechanism: prefill's speedup over
decode's), each block's log ratio for a row, a row's interval state, and what an invocation
costs in device time."""

from __future__ import annotations

import numpy as np

from mnnrepro import sides

MECHANISM = "prefill>decode"  # the mechanism check's row: prefill's speedup over decode's


def row_name(baseline: str, treatment: str, what: str) -> str:
    """A judged row's name: 'baseline/treatment phase' (or MECHANISM); row_parts reads it."""
    return f"{baseline}/{treatment} {what}"


def row_parts(row: str) -> tuple[str, str, str]:
    """(baseline, treatment, phase or MECHANISM) of a row_name."""
    pair, what = row.split(" ", 1)
    baseline, treatment = pair.split("/")  # variant names are slugs: no `/`, no space
    return baseline, treatment, what


def block_log_ratios(records: list[dict], row: str) -> np.ndarray:
    """The per-block log speedups of a row, over the blocks measured so far (in block order)."""
    baseline, treatment, what = row_parts(row)
    tps = {}
    for record in records:
        if record.get("status") == "ok":
            for r in record["results"]:
                tps[(record["variant"], r["phase"], record["invocation"]["block"])] = r["tps"]

    def log_speedup(phase, block):
        return np.log(tps[(treatment, phase, block)] / tps[(baseline, phase, block)])

    phases = ("prefill", "decode") if what == MECHANISM else (what,)
    measured = [
        {b for (v, p, b) in tps if (v, p) == (var, ph)}
        for var in (baseline, treatment)
        for ph in phases
    ]
    blocks = sorted(set.intersection(*measured))
    if what == MECHANISM:
        return np.array([log_speedup("prefill", b) - log_speedup("decode", b) for b in blocks])
    return np.array([log_speedup(what, b) for b in blocks])


def row_state(log_ratios: np.ndarray, thresholds, target: float | None, interval) -> dict:
    """The row's interval (as ratios; interval: StoppingRule.interval's) and whether it
    settles the row. A row that judges no claim, in a run with no target half-width, asks
    nothing of the run: settled."""
    asks_nothing = thresholds is None and target is None
    if log_ratios.size < 3:
        return {"low": None, "high": None, "settled": asks_nothing}
    low, high = interval(log_ratios)
    if not np.isfinite([low, high]).all():
        return {"low": None, "high": None, "settled": asks_nothing}
    if asks_nothing:
        return {"low": low, "high": high, "settled": True}
    if thresholds is None:  # no claim: precise enough for its own question
        middle = float(np.exp(log_ratios.mean()))
        return {"low": low, "high": high, "settled": (high - low) / 2 / middle <= target}
    return {"low": low, "high": high, "settled": sides.settled(low, high, thresholds)}


def invocation_seconds(total, wall, quiet_wait, thermal_wait, cooldown_s: float) -> float:
    """One invocation's device time: its own recorded total (`device_time_s`), or for a record
    made before it was kept, its wall time, its gates' waits and the cool-down before it. The
    one rule for a run's budget (device_seconds) and the dry run's estimate (plan/overview)."""
    if total is not None:
        return float(total)
    return float(wall or 0.0) + float(quiet_wait or 0.0) + float(thermal_wait or 0.0) + cooldown_s


def device_seconds(records: list[dict], cooldown_s: float) -> float:
    """The device time the records took (a function of the records: a resumed run counts the
    same)."""
    return sum(
        invocation_seconds(
            (r.get("device_time_s") or {}).get("total"),
            r.get("wall_s"),
            (r.get("quiet_gate") or {}).get("waited_s"),
            (r.get("thermal_gate") or {}).get("waited_s"),
            cooldown_s,
        )
        for r in records
    )
