"""bench.csv + validity checks -> summary.csv and summary.json (device x model x phase)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mnnrepro.analysis import verdict as vd
from mnnrepro.analysis.aa_control import aa_controls, aa_fields, aa_problems
from mnnrepro.analysis.conditions import (
    blocks_under_load,
    order_counts,
    order_effect_p,
    remeasurements,
    run_problems,
    thermal_counts,
    with_dependence,
)
from mnnrepro.analysis.prediction_score import SCORE_COLUMNS, predicted_for, score_fields
from mnnrepro.analysis.text import reps_text
from mnnrepro.design import Design
from mnnrepro.intervals import ChosenInterval, experiment_intervals, interval_name
from mnnrepro.phases import ALL_PHASES, PHASES
from mnnrepro.runs.precision import bias_adjusted_log_gain, mode_thresholds
from mnnrepro.runs.stopping_rows import row_name
from mnnrepro.stats import compare_phase, paired_blocks

log = logging.getLogger(__name__)


# what names one compared pair's phase and its medians, in the summary and the sweep's alike
WHERE_COLUMNS = ["experiment", "device", "model"]
PAIR_COLUMNS = [
    "phase",
    "baseline",
    "treatment",
    "n_pairs",
    "median_baseline_tps",
    "median_treatment_tps",
]
SUMMARY_COLUMNS = [
    *WHERE_COLUMNS,
    *PAIR_COLUMNS,
    "cv_baseline",
    "cv_treatment",
    "ratio",
    "ci_low",
    "ci_high",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "ci_level",
    "n_boot",
    "seed",
    "interval",
    "p_wilcoxon",
    "half_width_rel",
    "reps_for_target",
    "blocks_stop_reason",
    "max_other_load",
    "blocks_under_load",
    "hot_starts",
    "thermal_ungated",
    "baseline_first_blocks",
    "treatment_first_blocks",
    "remeasured_invocations",
    "remeasurements",
    "claim_gain",
    *SCORE_COLUMNS,
    "reference_gain",
    "tolerance",
    "aa_ci_low",
    "aa_ci_high",
    "aa_margin",
    "expectation",
    "checks_passed",
    "verdict",
    "verdict_reason",
    # what the interval assumes, checked on the blocks (stats.assumption_checks), and the
    # level it keeps: per row, or shared over the family of rows (stats.familywise)
    "row_level",
    "family_rows",
    "lag1_autocorrelation",
    "lag1_p",
    "runs_p",
    "excess_kurtosis",
    "order_effect_p",
    "dependence_p",
    "serial_dependence",
    "dependence_widening",
    "gain_bias_adjusted",
]


def failed_checks(validity: dict, pair: tuple[str, str] | None = None) -> list[str]:
    """Failed checks of one compared pair (with those that belong to no pair)."""
    return [
        f"{c['name']}: {c['evidence']}"
        for c in validity["checks"]
        if not c["passed"] and (pair is None or c.get("pair") in (None, list(pair)))
    ]


def measured_phases(group: pd.DataFrame, pair: tuple[str, str]) -> list[str]:
    """The phases both variants of the pair measured, in order: prefill and decode always;
    the vision phases where the model takes images and both engines took them."""
    both = [set(group[group["variant"] == v]["phase"]) for v in pair]
    return [p for p in ALL_PHASES if p in PHASES or all(p in phases for phases in both)]


EXPECTATIONS = {"claim": "claim", "fallback": "no regression", "equal": "no difference"}


def speed_verdict(mode: str, gain_low: float, gain_high: float, claim, tolerance: float) -> str:
    if mode == "fallback":
        return vd.fallback_verdict(gain_low, gain_high, tolerance)
    if mode == "equal":
        return vd.equality_verdict(gain_low, gain_high, tolerance)
    return vd.claim_verdict(gain_low, gain_high, claim, tolerance)


def stop_reason(stop: dict, result: dict, target: float, row: str = "") -> str:
    """Why the run has this many blocks, and for a fixed number whether the target CI
    half-width (target: `stats.target_half_width`) was reached or how many blocks it would
    take; after a stop on the verdict, also when this row (`baseline/treatment phase`)
    settled."""
    reason = stop.get("reason", "")
    state = stop.get("rows", {}).get(row)
    if state is not None:
        return f"{reason}; this row " + (
            f"settled (first at block {state['first_settled_at']})"
            if state["settled"]
            else "not settled (its verdict may still change)"
        )
    if reason and reason != "fixed repetitions":
        return reason  # precision on demand says it itself
    reached = result["half_width_rel"] <= target
    return f"fixed {result['n_pairs']} repetitions; target half-width {target:.1%} " + (
        "reached" if reached else f"not reached (~{reps_text(result['reps_for_target'])} needed)"
    )


def summarize(
    bench: pd.DataFrame,
    validity: dict[tuple[str, str], dict],
    design: Design,
    modes: dict[tuple[tuple[str, str], str], str],
    stopping: dict[tuple[str, str], dict] | None = None,
    prediction: dict | None = None,
) -> pd.DataFrame:
    """modes: (pair's variant names, device) -> how the pair is judged there
    (engines.pairs.device_modes; never assumed); stopping: (device, model) -> why its
    benchmark stopped (from the run index); prediction: prediction.json, whose predicted
    gains a pair judged against its claim is scored against (analysis/prediction_score.py)."""

    # a run that stopped on its verdict is judged on intervals its stopping rule keeps
    chosen = experiment_intervals(design)
    comparison = design.comparison
    rng = np.random.default_rng(chosen.interval.seed)
    hot_start = design.bench.hot_start
    rows = []
    for (device, model), group in bench.groupby(["device", "model"], sort=True):
        if group["emulated"].any():  # recorded in bench.csv, never in a speedup or a verdict
            log.info("%s / %s: emulated device, timings not judged", device, model)
            continue
        group_chosen = with_dependence(chosen, group, design)
        aa = aa_controls(group, design, group_chosen, rng)
        drift = aa_problems(aa, comparison.aa_margin)
        stop = (stopping or {}).get((device, model)) or {}
        for pair in comparison.pair_names:
            failed = [*failed_checks(validity[(device, model)], pair), *drift]
            failed += run_problems(group, pair, hot_start)
            mode = modes.get((pair, device))
            if mode is None:
                raise ValueError(f"no mode for pair {pair} on device {device} (device_modes)")
            for phase in measured_phases(group, pair):
                predicted = None
                if prediction and mode == "claim":
                    predicted = predicted_for(prediction, pair, phase, model)
                judged = JudgedRow(pair, phase, mode, failed, stop, aa, predicted)
                rows.append(phase_row(group, judged, design, group_chosen, rng))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


@dataclass(frozen=True)
class JudgedRow:
    """What one summary row judges, and what it already knows: the pair, the phase, the pair's
    mode on the device, the failed checks, why the benchmark stopped, the A/A intervals, the
    gain predicted for it."""

    pair: tuple[str, str]
    phase: str
    mode: str
    failed: list[str]
    stop: dict
    aa: dict
    predicted: dict | None = None  # the pair's predicted gain in this phase (none: not scored)


def phase_row(
    group: pd.DataFrame, row: JudgedRow, design: Design, chosen: ChosenInterval, rng
) -> dict:
    """One row of summary.csv: a pair's speedup in one phase on one device and model, with its
    interval (chosen: intervals.experiment_intervals'), conditions, checks and verdict."""
    comparison, pair, phase = design.comparison, row.pair, row.phase
    part = group[group["phase"] == phase]
    result = compare_phase(part, *pair, chosen.interval, chosen.target_half_width, rng)
    claimed = row.mode == "claim"
    claim = comparison.claims.get(phase) if claimed else None
    loaded = blocks_under_load(part, pair)
    verdict, reason = phase_verdict(
        row.mode, result, claim, comparison.tolerance, row.failed, loaded
    )
    (device,), (model,) = part["device"].unique(), part["model"].unique()
    estimate = interval_fields(result, chosen)
    return {
        "experiment": design.name,
        "device": device,
        "model": model,
        "phase": phase,
        "baseline": pair[0],
        "treatment": pair[1],
        **estimate,
        "blocks_stop_reason": stop_reason(
            row.stop, result, chosen.target_half_width, row_name(*pair, phase)
        ),
        **condition_fields(part, pair, loaded),
        "claim_gain": claim,
        "reference_gain": comparison.reference_gains.get(phase) if claimed else None,
        **score_fields(row.predicted, estimate),
        "tolerance": comparison.tolerance,
        **aa_fields(row.aa, phase, comparison.aa_margin),
        "expectation": EXPECTATIONS[row.mode],
        "checks_passed": not row.failed,
        "verdict": verdict,
        "verdict_reason": reason,
        **assumption_fields(part, row, design, chosen, claim),
    }


def assumption_fields(part, judged, design: Design, chosen: ChosenInterval, claim) -> dict:
    """Beside the checks compare_phase makes on the blocks: the order effect, and the gain
    corrected for the bias of stopping on it."""
    return {
        "dependence_p": chosen.dependence_p,
        "serial_dependence": chosen.serial_dependence,
        "order_effect_p": order_effect_p(part, judged.pair),
        "gain_bias_adjusted": stopped_gain(part, judged, design, chosen, claim),
    }


def stopped_gain(part, judged, design: Design, chosen: ChosenInterval, claim) -> float | None:
    """The gain at a run's stop corrected for the bias of stopping on it (Whitehead's
    bias-adjusted estimate, sequential.bias_adjusted_mean): for a run that stops on its verdict,
    this row's stopping simulated at its blocks' standard deviation, the run's looks and look
    level, never before the look at which the run's other rows had all settled (the run
    stops on every row at once). None for other runs and rows without thresholds."""
    repetitions = design.repetitions
    thresholds = mode_thresholds(judged.mode, claim, design.comparison.tolerance)
    if not repetitions.stops_on_verdict or not thresholds:
        return None
    pair = judged.pair
    paired = paired_blocks(part, *pair)
    logs = np.log(paired[pair[1]].to_numpy() / paired[pair[0]].to_numpy())
    if logs.size < 3:
        return None
    adjusted = bias_adjusted_log_gain(
        logs,
        row_name(*pair, judged.phase),
        repetitions.stopping_looks(),
        chosen.interval.level,
        thresholds,
        judged.stop.get("rows", {}),
        seed=chosen.interval.seed,
    )
    return float(np.exp(adjusted) - 1)


def phase_verdict(mode, result, claim, tolerance, failed, loaded) -> tuple[str, str]:
    """The verdict of one phase of a pair and why: its speed's (speed_verdict), unless a
    validity check failed; a run measured under load says so."""
    speed = speed_verdict(mode, result["ci_low"] - 1, result["ci_high"] - 1, claim, tolerance)
    verdict, reason = vd.final_verdict(speed, failed)
    if loaded and not failed:
        reason = f"measured under load in {loaded} of {result['n_pairs']} blocks"
    return verdict, reason


def interval_fields(result: dict, chosen: ChosenInterval) -> dict:
    """compare_phase's result as summary columns: the speedup, the gain and its interval, and
    how the interval was computed."""
    return {
        **result,
        "gain": result["ratio"] - 1,
        "gain_ci_low": result["ci_low"] - 1,
        "gain_ci_high": result["ci_high"] - 1,
        "ci_level": chosen.interval.level,
        "n_boot": chosen.interval.n_boot,
        "seed": chosen.interval.seed,
        "interval": interval_name(chosen),
        "row_level": chosen.row_level,
        "family_rows": chosen.family,
    }


def condition_fields(part: pd.DataFrame, pair: tuple[str, str], loaded) -> dict:
    """Under what a pair's phase was measured: other load, temperatures, order, re-measures."""
    return {
        "max_other_load": part["other_load"].max() if "other_load" in part else None,
        "blocks_under_load": loaded,
        **thermal_counts(part[part["variant"].isin(pair)]),
        **order_counts(part, pair),
        **remeasurements(part, pair),
    }


SPEEDUP_METHOD = (
    "geometric mean over interleaved blocks of treatment/baseline tok/s; CI: Student t on the "
    "mean per-block log ratio (t quantile of min - 1 degrees of freedom after precision on "
    "demand), or the paired percentile bootstrap with `stats.interval: bootstrap`; paired "
    "Wilcoxon signed-rank two-sided p-value (exact at small n)"
)


def summary_document(
    summary: pd.DataFrame, validity: dict[tuple[str, str], dict], design: Design
) -> dict:
    return {
        "experiment": design.name,
        "comparison": design.comparison.section,
        "stats": design.stats,
        "bench": design.bench,
        "verdict_rule": " ".join((vd.RULE, vd.FALLBACK_RULE, vd.EQUALITY_RULE)),
        "speedup_method": SPEEDUP_METHOD,
        "validity": [{"device": d, "model": m, **v} for (d, m), v in sorted(validity.items())],
        "rows": summary.replace({np.nan: None}).to_dict(orient="records"),
    }
