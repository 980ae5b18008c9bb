"""How the report's sections write a number or a run's conditions (shared by report.py and
explaining.py)."""

from __future__ import annotations

import pandas as pd

from mnnrepro.stats import REPS_CAP

OTHER_LOAD_WARNING = 0.25  # CPUs busy with other work during an invocation


def pct(x) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{x:+.1%}"


def num(x, fmt: str) -> str:
    return "n/a" if x is None or pd.isna(x) else format(x, fmt)


def conditions(row) -> str:
    """'quiet', or 'under load (k/n blocks)': the quiet gate's and the run's own load; and
    how many invocations were measured again (re-measurement is part of the record)."""
    loaded = getattr(row, "blocks_under_load", 0)
    text = (
        "quiet"
        if pd.isna(loaded) or not loaded
        else (f"**under load** ({int(loaded)}/{row.n_pairs} blocks)")
    )
    hot = getattr(row, "hot_starts", None)
    if hot is not None and not pd.isna(hot) and int(hot):
        text += f"; **{int(hot)} invocations started hot** (above bench.max_temp_c)"
    ungated = getattr(row, "thermal_ungated", None)
    if ungated is not None and not pd.isna(ungated) and int(ungated):
        text += (
            f"; **no temperature to gate on** before {int(ungated)} invocations "
            "(the thermal gate could not wait: see bench.thermal_zones)"
        )
    again = getattr(row, "remeasured_invocations", None)
    if again is not None and not pd.isna(again) and int(again):
        text += f"; **{int(again)} invocations re-measured** ({row.remeasurements})"
    return text


def reps_text(reps: int) -> str:
    """How a table says a stats.reps_for_half_width result."""
    return f"more than {REPS_CAP}" if reps > REPS_CAP else str(reps)
