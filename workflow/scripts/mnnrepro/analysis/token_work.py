"""A token's work, from the profiles a prediction counts (kernels.csv's ins_* columns, per
function): each variant's instructions by class per profiled phase, in streaming functions,
in the others and in its engine's waiting functions, and from them one token's in prefill and
in decode, with what a prefill costs once told apart where a short prefill was profiled."""

from __future__ import annotations

import pandas as pd

from mnnrepro.devices.instruction_mix import CLASSES
from mnnrepro.errors import DataError
from mnnrepro.phases import PHASES, SHORT_PREFILL_PHASE, STARTUP_PHASE, short_prompt

SME_CLASSES = ("sme_outer_product", "sme_other", "sme_mode")
CLASS_COLUMNS = {c: f"ins_{c}" for c in CLASSES}  # what is counted -> its kernels.csv column


def mixes(
    kernels: pd.DataFrame,
    device: str,
    model: str,
    variant: str,
    waiting: str = "",
    columns: dict[str, str] = CLASS_COLUMNS,
) -> dict[str, dict]:
    """Per profiled phase (the start-up too): the variant's instructions by class, in
    streaming functions, in the others, and in its engine's waiting functions (waiting: a
    regular expression on the symbols, EngineKind.waiting_functions; their instructions are
    kept apart and cost no time) ({"streaming", "core", "waiting"}: counts indexed by
    kernels.csv's ins_* columns; columns: other counts of the same rows, by name, such as their
    instructions' pressure on each of a core's units, analysis/instruction_prices.py); per_token
    turns them into a token's."""
    rows = kernels[
        (kernels["device"] == device)
        & (kernels["model"] == model)
        & (kernels["variant"] == variant)
        & kernels["instructions"].notna()
    ]
    names = {column: name for name, column in columns.items()}
    symbols = rows["symbol"].astype(str)
    waits = symbols.str.contains(waiting) if waiting else pd.Series(False, index=rows.index)
    streaming = runs_sme(rows) & ~waits
    totals = {}
    short = (SHORT_PREFILL_PHASE,) if (rows["phase"] == SHORT_PREFILL_PHASE).any() else ()
    for phase in (*PHASES, STARTUP_PHASE, *short):
        in_phase = rows["phase"] == phase
        if not in_phase.any():
            raise DataError(
                "kernels.csv", f"no instruction counts of {variant} {phase} on {device}"
            )
        totals[phase] = {
            group: rows[in_phase & where][list(names)].fillna(0).sum().rename(names)
            for group, where in (
                ("streaming", streaming),
                ("core", ~streaming & ~waits),
                ("waiting", waits),
            )
        }
    return totals


def runs_sme(rows: pd.DataFrame) -> pd.Series:
    """Whether each row's function ran SME instructions (kernels.csv's ins_* columns): a
    streaming function, whose instructions the SME2 unit runs."""
    return rows[[f"ins_{c}" for c in SME_CLASSES]].fillna(0).sum(axis=1) > 0


def per_token(totals: dict, tokens: dict[str, int], target: int | None = None) -> dict:
    """Each phase's counts minus the start-up's, over the tokens the phase adds to it. Where a
    short prefill was profiled, prefill's cost per token is the two prefills' difference over
    their prompts', and what is left (less the start-up) is paid once per prefill
    (`prefill_once`), spread over the target prompt's tokens (the profiled prompt's if none)."""
    out = {p: spread(totals[p], totals[STARTUP_PHASE], tokens[p] - 1) for p in PHASES}
    short, prompt = totals.get(SHORT_PREFILL_PHASE), tokens["prefill"]
    if short is None and target not in (None, prompt):
        raise DataError(
            "kernels.csv",
            f"no {SHORT_PREFILL_PHASE} profile, which a prediction for a "
            f"{target}-token prompt needs (profiled: {prompt})",
        )
    if short is None:
        return out
    each = spread(totals["prefill"], short, prompt - short_prompt(prompt))
    once = {
        group: {c: max((per - each[group][c]) * (prompt - 1), 0.0) for c, per in counts.items()}
        for group, counts in out["prefill"].items()
    }
    spread_over = (target or prompt) - 1
    out["prefill"] = {
        group: {c: per + once[group][c] / spread_over for c, per in counts.items()}
        for group, counts in each.items()
    }
    return {**out, "prefill_once": once}


def spread(counts: dict, less: dict, tokens: int) -> dict:
    """counts less `less`, by group and what is counted, over tokens (at least 1), none below
    0."""
    return {
        group: {
            c: max(float(n - less[group][c]), 0.0) / max(tokens, 1) for c, n in by_class.items()
        }
        for group, by_class in counts.items()
    }


def for_prompt(mix: dict, made_for: int, prompt: int) -> dict:
    """A token's work (per_token's, made for a `made_for`-token prompt) for another prompt:
    what a prefill does once spread over that prompt's tokens instead."""
    once = mix.get("prefill_once")
    if once is None:
        raise DataError("prediction", "no prefill_once: it was made without a short prefill")
    prefill = {
        group: {
            c: per - once[group][c] / (made_for - 1) + once[group][c] / (prompt - 1)
            for c, per in counts.items()
        }
        for group, counts in mix["prefill"].items()
    }
    return {**mix, "prefill": prefill}
