"""Comparing registered runs: per device x model x phase x pair, each run's gain with its own
interval, verdict and validity, and, where both runs carry paired blocks, how the gain moved
between them (the ratio of the runs' speedups: a Welch t interval on the difference of their
per-block log ratios, unpaired, since two runs share no block)."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pandas as pd

from mnnrepro.stats import paired_blocks
from mnnrepro.store.schema import open_store

KEY = ["device", "model", "phase", "baseline", "treatment"]
METHOD = "Welch t on the runs' per-block log ratios (unpaired across runs)"


def block_log_ratios(db: sqlite3.Connection, run_id: str, key: tuple) -> np.ndarray:
    """One run's per-block log(treatment / baseline) tok/s for one row."""
    device, model, phase, baseline, treatment = key
    table = pd.read_sql_query(
        "SELECT variant, block, tps FROM invocations WHERE run_id = ? AND device = ? AND "
        "model = ? AND phase = ? AND variant IN (?, ?)",
        db,
        params=(run_id, device, model, phase, baseline, treatment),
    )
    if table.empty:
        return np.array([])
    wide = paired_blocks(table, baseline, treatment)
    return np.log(wide[treatment].to_numpy() / wide[baseline].to_numpy())


def welch_ratio(a: np.ndarray, b: np.ndarray, ci_level: float) -> tuple[float, float, float]:
    """b's speedup over a's (ratio of geometric means) with its Welch t interval."""
    from scipy import stats as sps

    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = sps.t.ppf(0.5 + ci_level / 2, df) * math.sqrt(va + vb)
    diff = b.mean() - a.mean()
    return math.exp(diff), math.exp(diff - half), math.exp(diff + half)


def resolve_run(db: sqlite3.Connection, given: str) -> str:
    """A run id from its id or a unique prefix of it."""
    found = [
        r for (r,) in db.execute("SELECT run_id FROM runs WHERE run_id LIKE ?", (f"{given}%",))
    ]
    if len(found) != 1:
        raise ValueError(
            f"run {given!r}: {'no' if not found else len(found)} registered runs match"
        )
    return found[0]


def compare_runs(store: str, runs: list[str], ci_level: float = 0.95) -> pd.DataFrame:
    """One row per key and run (its gain, interval, verdict, checks); beside every run after
    the first, the change of its speedup from the first run's where both have blocks."""
    db = open_store(store)
    try:
        run_ids = [resolve_run(db, given) for given in runs]
        for run_id in run_ids:
            origin, judged = db.execute(
                "SELECT origin, judged FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if not judged:
                raise ValueError(
                    f"run {run_id[:12]} is {origin}: imported as reported, never judged"
                )
        rows = []
        for run_id in run_ids:
            part = pd.read_sql_query(
                "SELECT r.experiment, s.* FROM summary_rows s JOIN runs r USING (run_id) "
                "WHERE run_id = ?", db, params=(run_id,),
            )  # fmt: skip
            if part.empty:
                raise ValueError(f"run {run_id[:12]} has no summary rows in {store}")
            rows.append(part)
        table = pd.concat(rows, ignore_index=True)
        first = run_ids[0]
        changes = []
        none = (None, None, None, None)
        for row in table.itertuples():
            if row.run_id == first:  # the reference itself
                changes.append(none)
                continue
            key = tuple(getattr(row, k) for k in KEY)
            a, b = block_log_ratios(db, first, key), block_log_ratios(db, row.run_id, key)
            both = len(a) >= 2 and len(b) >= 2
            changes.append((*welch_ratio(a, b, ci_level), METHOD) if both else none)
    finally:
        db.close()
    change = pd.DataFrame(
        changes, columns=["change_vs_first", "change_ci_low", "change_ci_high", "change_method"]
    )
    return pd.concat([table, change], axis=1)


def markdown(table: pd.DataFrame) -> str:
    def pct(x):
        return "-" if x is None or pd.isna(x) else f"{x:+.1%}"

    lines = [
        "| run | experiment | device | model | phase | pair | gain [CI] | verdict | checks | "
        "speedup vs the first run [CI] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        change = (
            "-" if pd.isna(r.change_vs_first)
            else f"x{r.change_vs_first:.3f} [{r.change_ci_low:.3f}, {r.change_ci_high:.3f}]"
        )  # fmt: skip
        lines.append(
            f"| {r.run_id[:12]} | {r.experiment} | {r.device} | {r.model} | {r.phase} | "
            f"{r.treatment} vs {r.baseline} | {pct(r.gain)} [{pct(r.gain_ci_low)}, "
            f"{pct(r.gain_ci_high)}] | {r.verdict} | {'pass' if r.checks_passed else 'FAIL'} | "
            f"{change} |"
        )
    return "\n".join(lines)
