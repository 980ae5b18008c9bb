"""The report's sections on the kernels: where the time goes per phase, what explains the change
between a pair's variants, and the instruction mix."""

from __future__ import annotations

import pandas as pd

from mnnrepro.analysis.attribution import MIX_COLUMNS, phase_summary
from mnnrepro.devices.instruction_mix import CLASSES


def engine_functions(rows: pd.DataFrame) -> pd.Series:
    """(library, symbol) -> count of one profile's functions in the engine's libraries."""
    engine = rows[rows["engine_library"].astype(bool)]
    return engine.groupby(["library", "symbol"])["count"].sum()


def change_explained(table: pd.DataFrame, pairs, top: int) -> pd.DataFrame:
    """Per device x model x judged pair x phase: how much of the profiled invocations' change
    in samples (CPU time: perf and simpleperf sample the process at a fixed rate) the change
    in the hot kernels accounts for, the hot kernels being the union of both variants' `top`
    engine functions (so the treatment's SME2 kernels meet the functions they replace).
    QEMU counts executed blocks, which are not time: no share is given for them."""
    rows = []
    for (device, model, phase), group in table.groupby(["device", "model", "phase"]):
        for base, treat in pairs:
            b, t = group[group["variant"] == base], group[group["variant"] == treat]
            if b.empty or t.empty:
                continue
            per_b, per_t = engine_functions(b), engine_functions(t)
            hot = set(per_b.nlargest(top).index) | set(per_t.nlargest(top).index)
            change = int(b["count"].sum() - t["count"].sum())
            kernel_change = int(per_b[per_b.index.isin(hot)].sum()) - int(
                per_t[per_t.index.isin(hot)].sum()
            )
            timed = b["unit"].iloc[0] == "samples"
            rows.append(
                {
                    "device": device,
                    "model": model,
                    "phase": phase,
                    "baseline": base,
                    "treatment": treat,
                    "unit": b["unit"].iloc[0],
                    "baseline_count": int(b["count"].sum()),
                    "treatment_count": int(t["count"].sum()),
                    "change": change,
                    "kernel_change": kernel_change,
                    "explained_share": kernel_change / change if timed and change else None,
                    "kernels": len(hot),
                }
            )
    return pd.DataFrame(rows)


def change_section(table: pd.DataFrame, pairs, top: int) -> list[str]:
    changes = change_explained(table, pairs, top)
    if changes.empty:
        return []
    lines = [
        "What the hot kernels account for: per judged pair and phase, the profiled invocations' "
        "counts (baseline - treatment = the change) and the change within the union of both "
        f"variants' top {top} engine functions; for sample profiles (CPU time) the share of the "
        "change those kernels explain. Blocks (QEMU) are not time: no share.",
        "",
        "| device | model | treatment vs baseline | phase | unit | baseline | treatment "
        "| change | in the hot kernels | share explained |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in changes.itertuples():
        share = (
            "-"
            if r.explained_share is None or pd.isna(r.explained_share)
            else (f"{r.explained_share:.0%}")
        )
        lines.append(
            f"| {r.device} | {r.model} | {r.treatment} vs {r.baseline} | {r.phase} | {r.unit} "
            f"| {r.baseline_count} | {r.treatment_count} | {r.change} | {r.kernel_change} "
            f"| {share} |"
        )
    return [*lines, ""]


def where_time_goes(table: pd.DataFrame, top: int, pairs=()) -> list[str]:
    """The report's section: per device x model x variant x phase, the top functions; per
    judged pair, what the hot kernels' change accounts for."""
    if table.empty:
        return []
    lines = [
        "## Where the time goes (profiled invocations)",
        "",
        "One profiled invocation per variant and phase, never a timed repetition: prefill = the "
        "benchmark's prompt with 1 generated token, decode = a 1-token prompt with the "
        "benchmark's generated tokens. Perf/simpleperf count samples of the whole process, "
        "QEMU counts blocks executed in the engine's libraries (`kernels.csv`).",
        "",
        "| device | model | variant | phase | profiler | SME2 share of engine code "
        "| top functions |",
        "|---|---|---|---|---|---|---|",
    ]
    summary = phase_summary(table).set_index(["device", "model", "variant", "phase"])
    keys = ["device", "model", "variant", "phase"]
    for key, group in table.groupby(keys, sort=True):
        best = group.sort_values("count", ascending=False).head(top)
        named = ", ".join(
            f"{r.symbol or '?'} ({r.library}) {r.share:.1%}" for r in best.itertuples()
        )
        share = summary.loc[key, "sme2_share"]
        shown = "-" if pd.isna(share) else f"{share:.1%}"
        lines.append(
            f"| {' | '.join(map(str, key))} | {group['profiler'].iloc[0]} | {shown} | {named} |"
        )
    return [*lines, "", *mix_section(table), *change_section(table, pairs, top)]


def mix_section(table: pd.DataFrame) -> list[str]:
    """Where QEMU counted them: the instructions the engine's libraries executed, per device x
    model x variant x phase, and each class's share (kernels.csv's ins_* columns; 3 significant
    digits: on a tiny model the load's scalar code dwarfs the kernels')."""
    numbers = table[["instructions", *MIX_COLUMNS]].apply(pd.to_numeric, errors="coerce")
    counted = table["engine_library"].astype(bool) & numbers["instructions"].notna()
    if not counted.any():
        return []  # as read back, a profile without them has empty cells
    keys = ["device", "model", "variant", "phase"]
    sums = numbers[counted].groupby([table.loc[counted, k] for k in keys], sort=True).sum()
    lines = [
        "Instructions the engine's libraries executed, by class (QEMU, `kernels.csv` ins_*):",
        "",
        f"| {' | '.join(keys)} | instructions | {' | '.join(CLASSES)} |",
        "|---|---|---|---|---:|" + "---:|" * len(CLASSES),
    ]
    for key, row in sums.iterrows():
        total = int(row["instructions"])
        shares = [f"{100 * row[c] / total:.3g}%" if total else "-" for c in MIX_COLUMNS]
        lines.append(f"| {' | '.join(map(str, key))} | {total} | {' | '.join(shares)} |")
    return [*lines, ""]
