"""`bench.sweep`: every point's runs -> sweep/bench.csv, and its comparisons -> sweep/summary.csv
(one row per device x model x point x pair x phase, keyed by the swept values; the main point
is included from bench.csv as point `main`, with the claim it is judged against)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mnnrepro.analysis.summary import PAIR_COLUMNS, WHERE_COLUMNS, blocks_under_load, run_problems
from mnnrepro.analysis.tables import bench_table
from mnnrepro.design import Design
from mnnrepro.intervals import experiment_intervals
from mnnrepro.records import read_record
from mnnrepro.stats import compare_phase

MAIN = "main"
POINT_COLUMNS = ["point", "prompt_tokens", "generate_tokens", "thread_num"]
SWEEP_SUMMARY_COLUMNS = [
    *WHERE_COLUMNS,
    *POINT_COLUMNS,
    *PAIR_COLUMNS,
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "p_wilcoxon",
    "half_width_rel",
    "claim_gain",
    "tolerance",
    "blocks_under_load",
    "checks_passed",
    "problems",
]


def with_point(table: pd.DataFrame, point: str) -> pd.DataFrame:
    table = table.copy()
    table.insert(3, "point", point)
    return table


def sweep_table(index_paths: list[str], resolve=str, max_other_load=None) -> pd.DataFrame:
    """sweep/bench.csv: bench.csv's columns for every sweep point's runs, with its point."""
    parts = []
    for path in index_paths:
        index = read_record(path, "run_index")
        parts.append(
            with_point(bench_table({path: index}, resolve, max_other_load), index["point"])
        )
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return table.sort_values(["device", "model", "point", "run_order", "phase"]).reset_index(
        drop=True
    )


def main_checks(summary_document: dict) -> dict[tuple[str, str, str, str], bool]:
    """(device, model, baseline, treatment) -> whether the main comparison's validity checks
    passed (correctness gate, kernels, run-time mask, A/A control): they belong to the builds,
    the model and the device, which every sweep point shares."""
    return {
        (r["device"], r["model"], r["baseline"], r["treatment"]): bool(r["checks_passed"])
        for r in summary_document["rows"]
    }


def checks_columns(problems: list[str], main_passed: bool | None) -> dict:
    """A point is evidence where the main comparison's checks passed and it has no problems
    of its own; `problems` says why not."""
    failed = [] if main_passed else ["the main comparison's checks failed"]
    return {
        "checks_passed": bool(main_passed) and not problems,
        "problems": "; ".join(problems + failed),
    }


def sweep_summary(
    sweep: pd.DataFrame,
    main: pd.DataFrame,
    design: Design,
    checks: dict[tuple[str, str, str, str], bool] | None = None,
) -> pd.DataFrame:
    """The gain of every compared pair at every point (sweep points and the main one), with
    the main comparison's validity checks (`checks`, from main_checks) and the point's own
    problems (settings that ran differ from the config, implausible timings) and load: a point
    whose `checks_passed` is false is not evidence, whatever its gain."""

    comparison = design.comparison
    rng = np.random.default_rng(design.stats.seed)
    # each point's intervals as its own stopping rule asks
    main_interval = experiment_intervals(design)
    point_interval = experiment_intervals(design, design.sweep_repetitions)
    table = pd.concat([with_point(main, MAIN), sweep], ignore_index=True)
    rows = []
    for (device, model, point), group in table.groupby(["device", "model", "point"], sort=True):
        if group["emulated"].astype(bool).any():
            continue  # emulated timings are recorded, never compared
        for pair in comparison.pair_names:
            rows_of_pair = group[group["variant"].isin(pair)]
            threads = rows_of_pair["thread_num"].dropna().unique()
            problems = run_problems(group, pair)
            main_passed = (checks or {}).get((device, model, *pair))
            for phase in ("prefill", "decode"):
                part = group[group["phase"] == phase]
                chosen = main_interval if point == MAIN else point_interval
                r = compare_phase(part, *pair, chosen.interval, chosen.target_half_width, rng)
                claim = comparison.claims.get(phase) if point == MAIN else None
                where = {"experiment": design.name, "device": device, "model": model}
                rows.append(
                    {
                        **where,
                        **point_settings(point, part, threads),
                        "phase": phase,
                        "baseline": pair[0],
                        "treatment": pair[1],
                        **gain_of(r, claim, comparison.tolerance),
                        "blocks_under_load": blocks_under_load(part, pair),
                        **checks_columns(problems, main_passed),
                    }
                )
    columns = list(SWEEP_SUMMARY_COLUMNS)
    if any(SME_CORES in row for row in rows):  # a column only where the sweep sets it
        columns.insert(columns.index("thread_num") + 1, SME_CORES)
    return pd.DataFrame(rows, columns=columns)


SME_CORES = "cpu_sme_core_num"  # a swept runtime setting without a default (sweep_plan)


def point_settings(point: str, part: pd.DataFrame, threads) -> dict:
    """What a sweep point varies, as its invocations ran it (POINT_COLUMNS, and the SME2
    thread count where the point sets it)."""
    sme = part[SME_CORES].dropna().unique() if SME_CORES in part else []
    return {
        "point": point,
        "prompt_tokens": int(part["prompt_tokens"].iloc[0]),
        "generate_tokens": int(part["generate_tokens"].iloc[0]),
        "thread_num": int(threads[0]) if len(threads) == 1 else None,
        **({SME_CORES: int(sme[0])} if len(sme) == 1 else {}),
    }


def gain_of(result: dict, claim, tolerance) -> dict:
    """A point's gain with its interval and statistics (compare_phase's result), and the claim
    it is held to (the main point's only)."""
    return {
        **{k: result[k] for k in ("n_pairs", "p_wilcoxon", "half_width_rel")},
        "median_baseline_tps": result["median_baseline_tps"],
        "median_treatment_tps": result["median_treatment_tps"],
        "gain": result["ratio"] - 1,
        "gain_ci_low": result["ci_low"] - 1,
        "gain_ci_high": result["ci_high"] - 1,
        "claim_gain": claim,
        "tolerance": tolerance if claim is not None else None,
    }
