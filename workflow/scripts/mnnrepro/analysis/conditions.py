"""Under what each compared pair was measured, per phase: other load, temperatures and the
thermal gate, the order of the variants in the blocks, re-measurements, and the problems of
a run that make it no evidence (settings that ran differ, implausible timings, hot starts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mnnrepro.assumptions import dependence_p, two_group_p
from mnnrepro.phases import PHASES
from mnnrepro.runs.precision import judged_row_names, records_of_table
from mnnrepro.runs.schedule import order_balance
from mnnrepro.runs.stopping_rows import block_log_ratios

if TYPE_CHECKING:
    from mnnrepro.design import Design
    from mnnrepro.intervals import ChosenInterval


def hot_starts(rows: pd.DataFrame) -> int | None:
    """Invocations that started while the device was above bench.max_temp_c (the thermal
    gate timed out hot); None where the records predate the column."""
    if "thermal_cool" not in rows or rows["thermal_cool"].isna().all():
        return None
    hot = rows[rows["thermal_cool"].astype(str) == "False"]
    return hot[["variant", "block"]].drop_duplicates().shape[0]


def ungated(rows: pd.DataFrame) -> int | None:
    """Invocations before which the device had no temperature the thermal gate could wait
    on (bench.csv `thermal_gated_zones` 0); None where the records predate the column."""
    if "thermal_gated_zones" not in rows or rows["thermal_gated_zones"].isna().all():
        return None
    return int((rows["thermal_gated_zones"].fillna(1) == 0).sum())


def thermal_counts(rows: pd.DataFrame) -> dict:
    """summary.csv's thermal columns of one pair's invocations of one phase."""
    return {"hot_starts": hot_starts(rows), "thermal_ungated": ungated(rows)}


def run_problems(
    group: pd.DataFrame, pair: tuple[str, str], hot_start: str = "invalid"
) -> list[str]:
    """What the invocations themselves say is wrong: settings that ran differ from the
    config, an engine-reported time the invocation's wall time cannot hold, or (with
    `bench.hot_start: invalid`) an invocation that started on a hot device."""
    rows = group[group["variant"].isin(pair)]
    problems = []
    hot = hot_starts(rows)
    if hot and hot_start == "invalid":
        problems.append(
            f"{hot} invocations started above bench.max_temp_c (the thermal gate timed out "
            "hot): speeds of a throttling device (bench.hot_start: invalid)"
        )
    if "settings_mismatch" in rows:
        wrong = rows[rows["settings_mismatch"].astype("string").fillna("") != ""]
        for variant, part in wrong.groupby("variant"):
            problems.append(
                f"settings that ran differ from the config ({variant}, "
                f"{part['block'].nunique()} invocations): {part['settings_mismatch'].iloc[0]}"
            )
    if "build_fingerprint" in rows:
        prints = sorted(set(rows["build_fingerprint"].dropna().astype(str)))
        if len(prints) > 1:
            problems.append(
                f"the device's system software changed during the experiment ({len(prints)} "
                f"build fingerprints: {', '.join(prints)}): runs on different firmware are "
                "not one comparison"
            )
    problems += decode_definition_problems(rows, pair)
    if "timing_plausible" in rows:
        bad = rows[rows["timing_plausible"].astype(str) == "False"]
        if len(bad):
            problems.append(
                f"engine-reported time exceeds the invocation's wall time in "
                f"{bad[['variant', 'block']].drop_duplicates().shape[0]} invocations "
                f"({', '.join(sorted(set(bad['variant'])))}): speeds not explained by the run"
            )
    return problems


def decode_definition_problems(rows: pd.DataFrame, pair: tuple[str, str]) -> list[str]:
    """Both sides must measure decode the same way: N tokens generated in the context the
    P-token prompt left (`context_start` P: llm_bench -kv true at 3.6.1, -pg after it, the
    runner's own loop, llama-bench -d) or both from an empty one. Two engine versions that
    spell it differently measure different things under one name."""
    if "context_start" not in rows:
        return []
    decode = rows[rows["phase"] == "decode"]
    starts = {
        v: sorted(set(decode[decode["variant"] == v]["context_start"].dropna())) for v in pair
    }
    if len({tuple(s) for s in starts.values()}) <= 1:
        return []
    said = ", ".join(f"{v}: {', '.join(f'{int(c)}' for c in s) or '-'}" for v, s in starts.items())
    return [
        f"the two sides measured decode differently (tokens of context before the first decoded "
        f"one, {said}): not one measurement"
    ]


def blocks_under_load(part: pd.DataFrame, pair: tuple[str, str]) -> int:
    """Blocks of this pair in which either variant's invocation was measured under load."""
    if "under_load" not in part:
        return 0
    rows = part[part["variant"].isin(pair)]
    return int(rows.loc[rows["under_load"].astype(bool), "block"].nunique())


def order_counts(part: pd.DataFrame, pair: tuple[str, str]) -> dict:
    """How often the baseline and the treatment each ran first in the blocks holding both, as
    recorded (`position`): the schedule balances every pair, a resumed or re-measured run may
    not."""
    positions: dict[int, dict[str, int]] = {}
    if "position" in part:
        for block, variant, position in part[["block", "variant", "position"]].itertuples(
            index=False
        ):
            positions.setdefault(int(block), {})[variant] = int(position)
    balance = order_balance(positions, *pair)
    return {
        "baseline_first_blocks": balance["first_before"],
        "treatment_first_blocks": balance["second_before"],
    }


def run_dependence(group: pd.DataFrame, design: Design) -> float:
    """The p-value of serial dependence in one device x model's judged rows, all at once
    (assumptions.dependence_p): the rows the stopping rule judges
    (runs/precision.judged_row_names)."""
    records = records_of_table(group[group["phase"].isin(PHASES)])
    names = judged_row_names(design)
    return dependence_p([block_log_ratios(records, n) for n in names])


def with_dependence(chosen: ChosenInterval, group: pd.DataFrame, design: Design):
    """The chosen interval (intervals.run_intervals) with one device x model's dependence
    check (run_dependence): widened where dependence was found and the config widens for it."""
    return chosen.with_dependence(run_dependence(group, design))


def order_effect_p(part: pd.DataFrame, pair: tuple[str, str]) -> float | None:
    """The order effect: a two-sided Welch p-value of a difference in the per-block log speedup
    between blocks where the treatment ran first and where the baseline did (`position`);
    None where the positions are not recorded or a group has fewer than 2 blocks."""
    rows = part[part["variant"].isin(pair)]
    if "position" not in rows or rows["position"].isna().any():
        return None
    wide = rows.pivot_table(index="block", columns="variant", values=["tps", "position"])
    if wide.empty or wide.isna().any().any():
        return None
    baseline, treatment = pair
    logs = np.log(wide[("tps", treatment)] / wide[("tps", baseline)])
    first = wide[("position", treatment)] < wide[("position", baseline)]
    p = two_group_p(logs[first].to_numpy(), logs[~first].to_numpy())
    return None if np.isnan(p) else p


def remeasurements(part: pd.DataFrame, pair: tuple[str, str]) -> dict:
    """How many of the pair's invocations (of one phase) replaced an earlier measurement, and
    when and why (bench.csv's `superseded`, `superseded_reasons`, `remeasure`): a run measured
    again until the verdict suited would show here. None where the records predate the trace."""
    rows = part[part["variant"].isin(pair)]
    if "superseded" not in rows or rows["superseded"].isna().all():
        return {"remeasured_invocations": None, "remeasurements": ""}
    again = rows[rows["superseded"].fillna(0).astype(int) > 0]
    labels = sorted({str(x) for x in again.get("remeasure", []) if isinstance(x, str) and x})
    reasons = sorted(
        {
            why
            for text in again["superseded_reasons"].dropna().astype(str)
            for why in text.split("; ")
            if why
        }
    )
    text = "; ".join([*(f"label {label}" for label in labels), *reasons])
    return {"remeasured_invocations": len(again), "remeasurements": text}
