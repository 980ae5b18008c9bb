"""summary.md's "Gains side by side": every compared pair's gain per phase in one table, and
which of their engines' speeds are like for like (engines/timers.py: the same steps inside
both timers)."""

from __future__ import annotations

import pandas as pd

from mnnrepro.analysis.text import pct
from mnnrepro.engines.timers import like_for_like


def side_by_side_section(
    summary: pd.DataFrame, engines: dict, variant_engines: dict[str, str]
) -> list[str]:
    """Every compared pair's gain per phase, one column per pair: the engines' SME2 gains side
    by side (e.g. MNN's two builds, MNN masked vs allowed, llama.cpp's KleidiAI switch), and
    which engines' speeds are like for like (engines: name -> record; variant_engines: variant
    -> its engine's name)."""
    pairs = list(dict.fromkeys(f"{r.treatment} vs {r.baseline}" for r in summary.itertuples()))
    if len(pairs) < 2:
        return []
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in summary.itertuples():
        key = (row.device, row.model, row.phase)
        cells.setdefault(key, {})[f"{row.treatment} vs {row.baseline}"] = (
            f"{pct(row.gain)} [{pct(row.gain_ci_low)}, {pct(row.gain_ci_high)}] {row.verdict}"
        )
    out = [
        "",
        "## Gains side by side",
        "",
        "Gain (treatment over baseline) with its CI and verdict, per pair; a pair of another "
        "engine is a control: the same device, model and phase with that engine's SME2 kernels.",
        "",
        # tables by hand, not DataFrame.to_markdown: its padding would change summary.md,
        # which every shipped archive replays to byte for byte (archive/replay_check)
        "| device | model | phase | " + " | ".join(pairs) + " |",
        "|---|---|---|" + "---|" * len(pairs),
    ]
    for (device, model, phase), by_pair in cells.items():
        row = " | ".join(by_pair.get(p, "-") for p in pairs)
        out.append(f"| {device} | {model} | {phase} | {row} |")
    return out + like_for_like_lines(summary, engines, variant_engines)


def like_for_like_lines(summary: pd.DataFrame, engines: dict, variant_engines: dict) -> list[str]:
    """Where the pairs run engines whose timers hold different steps: the groups whose tokens
    per second compare (a gain, a ratio within one timer, holds either way)."""
    variants = {*summary["baseline"], *summary["treatment"]}  # the A/A twin: its baseline's
    names = {variant_engines[v] for v in variants if v in variant_engines}
    timers = {name: engines[name].kind.timers for name in sorted(names) if name in engines}
    groups = like_for_like(timers)
    if len(groups) < 2:
        return []
    said = "; ".join(", ".join(group) for group in groups)
    return [
        "",
        "Speeds (tok/s) compare across engines only where their timers hold the same steps "
        f"(docs/verdicts.md, what the timers hold): {said}. Each gain is a ratio within one "
        "engine's timer.",
    ]
