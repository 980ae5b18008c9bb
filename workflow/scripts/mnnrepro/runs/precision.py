"""How many interleaved blocks a benchmark runs: a fixed number, precision on demand, or
until the verdict is settled (below, `until: verdict`).

`bench.repetitions` is a number (exactly that many blocks) or {min, max, target_half_width}:
after `min` blocks, and after every further block, the CI of every judged pair (the compared
pairs and the A/A control) is computed in both phases from the raw records measured so far,
exactly as the summary will compute it (Student t on the log ratios, with the quantile of the
first look, intervals.ci_df); the run stops when every half-width is at most the target, or
after `max` blocks. The decision is a function of the raw records, so a resumed run makes the
same decision. Simulated coverage of this rule: benchmarks/results/ci_coverage.md."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from mnnrepro.assumptions import dependence_found
from mnnrepro.engines.pairs import PairModes
from mnnrepro.errors import ReproError
from mnnrepro.phases import PHASES
from mnnrepro.repetitions import Repetitions
from mnnrepro.runs.stopping_rows import (
    MECHANISM,
    block_log_ratios,
    device_seconds,
    row_name,
    row_parts,
    row_state,
)
from mnnrepro.sequential import StoppedRow, bias_adjusted_mean
from mnnrepro.stats import t_interval

if TYPE_CHECKING:
    from mnnrepro.design import Design
    from mnnrepro.intervals import ChosenInterval

log = logging.getLogger(__name__)


def half_widths(records: list[dict], pairs, ci_level: float, df: int | None) -> dict[str, float]:
    """'baseline/treatment phase' -> relative CI half-width over the blocks measured so far."""
    out = {}
    for baseline, treatment in pairs:
        for phase in PHASES:
            row = row_name(baseline, treatment, phase)
            log_ratio = block_log_ratios(records, row)
            if log_ratio.size < 2:
                out[row] = float("inf")
                continue
            low, high = t_interval(log_ratio, ci_level, df)
            out[row] = float((high - low) / 2 / np.exp(log_ratio.mean()))
    return out


def stopping_decision(
    records, blocks: int, repetitions, pairs, chosen: ChosenInterval, rows=None, cooldown_s=0.0
) -> dict | None:
    """After `blocks` complete blocks: None to go on, else why the run stops here (pairs: the
    judged pairs; rows: the judged rows' thresholds, verdict_thresholds', for a run that stops
    on the verdict; chosen: the interval its rows are judged on, intervals.run_intervals)."""
    ci_level = chosen.interval.level
    repetitions = Repetitions.of(repetitions)
    if repetitions.stops_on_verdict:
        rule = StoppingRule.of(repetitions, chosen)
        return verdict_decision(records, blocks, rule, rows, cooldown_s)
    n_min, n_max, target = repetitions.min, repetitions.max, repetitions.target_half_width
    if target is None:
        return {"blocks": blocks, "reason": "fixed repetitions"} if blocks >= n_max else None
    if blocks < n_min:
        return None
    widths = half_widths(records, pairs, ci_level, repetitions.ci_df())
    if all(w <= target for w in widths.values()):
        reason = f"target half-width {target:.1%} reached"
    elif blocks >= n_max:
        reason = f"max {n_max} blocks reached before the target half-width {target:.1%}"
    else:
        return None
    return {"blocks": blocks, "reason": reason, "target": target, "half_widths": widths}


# ---- stopping on the verdict (`bench.repetitions: {..., until: verdict}`) --------------------
#
# A judged row is a pair's speedup in one phase (the compared pairs, the A/A control) or the
# mechanism check of the main pair (prefill's speedup over decode's: is the prefill gain the
# larger?). The run looks at every block from `min` to `max`, or at the `looks` planned
# ones, and judges each row there on the Student t interval at the level calibrated for those
# looks (intervals.run_intervals, sequential.sequential_t_level), which keeps its coverage at
# whichever look the run stops, widened where the run's blocks show serial dependence
# (StoppingRule.judged_on); the row is settled when no threshold of its verdict lies inside
# the interval (the claim band's edges, the equality band's, the fallback's floor, the A/A
# margin's, 1 for the mechanism check), or, where no claim is judged, when the interval is as
# narrow as `target_half_width` (without one, it holds nothing up). The run stops at a look:
# when every row is settled, at the last look, or before a look `budget_s` cannot afford.
# Simulated under the noise scenarios of a phone: benchmarks/results/sequential_stopping.md.


def judged_row_names(design: Design) -> list[str]:
    """The rows a run that stops on its verdict judges, in order: each compared pair in each
    phase, the A/A control's (the baseline against its twin), the main pair's mechanism check.
    The stopping rule's thresholds (verdict_thresholds) and the summary's dependence check
    (analysis/conditions.run_dependence) are of these rows."""
    # pulls jsonschema: the verdict thresholds only
    from mnnrepro.engines.pairs import Pair

    pairs = [pair.names for pair in Pair.judged(design)]
    names = [
        row_name(baseline, treatment, phase) for baseline, treatment in pairs for phase in PHASES
    ]
    return [*names, row_name(*pairs[0], MECHANISM)]


def verdict_thresholds(design: Design, modes: PairModes) -> dict:
    """Row name (judged_row_names) -> the speedups (ratios) at which its verdict changes; None:
    no claim, settled by precision. A compared pair's by its mode on this device (modes:
    engines.pairs.modes_of the device's pair modes); the A/A control's by its margin; the
    mechanism check's, 1."""
    comparison = design.comparison
    margin = comparison.aa_margin
    rows = {}
    for name in judged_row_names(design):
        baseline, treatment, what = row_parts(name)
        if what == MECHANISM:
            rows[name] = [1.0]
        elif treatment == comparison.aa_variant:
            rows[name] = [1 / (1 + margin), 1 + margin]
        else:
            rows[name] = mode_thresholds(
                modes[(baseline, treatment)], comparison.claims.get(what), comparison.tolerance
            )
    return rows


def mode_thresholds(mode: str, claim: float | None, tol: float) -> list[float] | None:
    """The speedups (ratios) at which a pair's verdict changes in one phase, by its mode on the
    device; None: no claim to judge."""
    return {
        "claim": None if claim is None else [1 + claim - tol, 1 + claim + tol],
        "fallback": [1 - tol],
        "equal": [1 - tol, 1 + tol],
    }[mode]


def bias_adjusted_log_gain(
    logs: np.ndarray, name: str, looks, look_level: float, thresholds, stop_rows: dict, seed=0
) -> float:
    """A row's mean log gain at a run's stop, corrected for the bias of stopping on it
    (sequential.bias_adjusted_mean): its own stopping at its thresholds (ratios), simulated at its
    blocks' standard deviation over the run's looks (those its blocks reached) at look_level,
    never before the look by which the run's other rows (stop_rows, verdict_stop's) had all
    settled: the run stops on every row at once."""
    looks = [n for n in looks if n <= logs.size] or [logs.size]
    others = [s.get("first_settled_at") or looks[-1] for n, s in stop_rows.items() if n != name]
    row = StoppedRow(tuple(looks), look_level, tuple(np.log(thresholds)), max(others, default=0))
    return bias_adjusted_mean(float(logs.mean()), float(logs.std(ddof=1)), row, seed=seed)


def records_of_table(bench) -> list[dict]:
    """bench.csv's rows (one per kept invocation and phase) in the shape of the raw records this
    rule reads, for the analysis and the replays of a committed table."""
    return [
        {
            "status": "ok",
            "variant": variant,
            "invocation": {"block": int(block)},
            "results": [{"phase": r.phase, "tps": float(r.tps)} for r in rows.itertuples()],
        }
        for (variant, block), rows in bench.groupby(["variant", "block"], sort=True)
    ]


@dataclass(frozen=True)
class StoppingRule:
    """How a run that stops on its verdict decides: its repetitions, the looks it may stop
    at, the interval every row is judged on there (intervals.run_intervals; called with
    whether to widen it), and whether serial dependence found in the rows widens it."""

    repetitions: Repetitions
    looks: tuple[int, ...]
    interval: Callable[..., tuple[float, float]]
    target: float | None
    budget_s: float | None
    check_dependence: bool = True

    @classmethod
    def of(cls, repetitions, chosen: ChosenInterval) -> StoppingRule:
        """chosen: the interval the run's rows are judged on (intervals.run_intervals for
        these repetitions), the one the summary then reports."""
        repetitions = Repetitions.of(repetitions)

        def interval(logs, widen=False):
            return replace(chosen.interval, widen=widen).of(logs)

        return cls(
            repetitions=repetitions,
            looks=tuple(repetitions.stopping_looks()),
            interval=interval,
            target=repetitions.target_half_width,
            budget_s=repetitions.budget_s,
            check_dependence=chosen.widens_for_dependence,
        )

    def judged_on(self, ratios: dict[str, np.ndarray]):
        """The interval of every row at this look: widened where the rows, all at once, show
        serial dependence (assumptions.dependence_found), else as planned."""
        widen = self.check_dependence and dependence_found(ratios.values())
        return lambda logs: self.interval(logs, widen)


def verdict_decision(
    records: list[dict], blocks: int, rule: StoppingRule, rows: dict, cooldown_s
) -> dict | None:
    """After `blocks` complete blocks: None to go on, else why the run stops here; with a
    budget, the plan again from the seconds measured so far (replan)."""
    spent = device_seconds(records, cooldown_s)
    if rule.budget_s is not None:
        replan(rule, blocks, spent)
    if blocks < rule.looks[0]:
        return None
    ratios = {name: block_log_ratios(records, name) for name in rows}
    return verdict_stop(ratios, rows, rule, blocks, spent)


def affordable_looks(looks, per_block_s: float, budget_s: float | None) -> list[int]:
    """The looks whose blocks the budget affords at per_block_s a block (all without one): a
    run reaches the next look only if it is among them (verdict_stop), and the dry run's worst
    case is the last of them (plan/overview)."""
    return [n for n in looks if budget_s is None or n * per_block_s <= budget_s]


def replan(rule: StoppingRule, blocks: int, spent: float) -> None:
    """The plan again from the seconds measured so far, said in the job's log after every
    block: the last look the budget affords at that pace. A budget that cannot reach the first
    look ends the run with one line (a ReproError naming the key), not at a block where no
    interval is valid."""
    per_block = spent / blocks
    affordable = affordable_looks(rule.looks, per_block, rule.budget_s)
    if not affordable and blocks < rule.looks[0]:
        raise ReproError(
            f"bench.repetitions.budget_s: {rule.budget_s:g} s cannot reach the first look "
            f"(block {rule.looks[0]}) at the {per_block:.0f} s a block measured so far "
            f"({rule.looks[0] * per_block:.0f} s): raise budget_s or lower min; the {blocks} "
            "blocks measured are kept for a rerun"
        )
    log.info(
        "after %d blocks: %.0f s a block measured; the %g-s budget affords looks up to block %s",
        blocks,
        per_block,
        rule.budget_s,
        affordable[-1] if affordable else "none further",
    )


def verdict_stop(
    ratios: dict[str, np.ndarray], rows: dict, rule: StoppingRule, blocks: int, spent: float
) -> dict | None:
    """The rule itself, on each row's per-block log speedups so far (what verdict_decision
    reads from the records, and what benchmarks/sequential_stopping.py simulates): None to go
    on, else why the run stops, with every row's interval, whether it settled and at which
    look it first did. It stops only at a look: when every row is settled, at the last look,
    or when the next look would pass the budget at the mean device time of the blocks so far
    (a block that would pass it is not started)."""
    looks = rule.looks
    if blocks not in looks:
        return None
    interval = rule.judged_on(ratios)
    states = {n: row_state(ratios[n], rows[n], rule.target, interval) for n in rows}
    open_rows = [n for n, s in states.items() if not s["settled"]]
    next_look = next((n for n in looks if n > blocks), None)
    per_block = spent / blocks
    if not open_rows:
        reason = f"every judged row settled after {blocks} blocks"
    elif next_look is None:
        reason = f"max {blocks} blocks reached; unsettled: {open_rows}"
    elif next_look not in affordable_looks(looks, per_block, rule.budget_s):
        reason = (
            f"device-time budget {rule.budget_s:g} s: the next look (block {next_look}) would "
            f"pass it at {per_block:.0f} s a block ({spent:.0f} s spent); unsettled: {open_rows}"
        )
    else:
        return None
    first = first_settled(ratios, rows, rule)
    for name, state in states.items():
        state["thresholds"] = rows[name]
        state["first_settled_at"] = first[name]
    return {"blocks": blocks, "reason": reason, "rows": states, "device_s": round(spent, 1)}


def first_settled(ratios: dict[str, np.ndarray], rows: dict, rule: StoppingRule) -> dict:
    """Row name -> the first look at which it was settled, judged as the rule judged it there
    (None: never)."""
    first = dict.fromkeys(rows)
    for n in rule.looks:
        if n > min(r.size for r in ratios.values()) or all(v is not None for v in first.values()):
            break
        so_far = {k: r[:n] for k, r in ratios.items()}
        interval = rule.judged_on(so_far)
        for name in rows:
            if (
                first[name] is None
                and row_state(so_far[name], rows[name], rule.target, interval)["settled"]
            ):
                first[name] = n
    return first
