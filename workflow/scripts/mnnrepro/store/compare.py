"""Comparing registered runs: per device x model x phase x pair, each run's gain with its own
interval, verdict, validity (the names of the checks that failed) and the treatment engine's
version, and, where both runs carry paired blocks, how the gain moved from the first run's
(the ratio of the runs' speedups: a Welch t interval on the difference of their per-block log
ratios, unpaired, since two runs share no block).

Which runs and rows: a `Selection` (runs by id or prefix, or by an engine commit; rows by
device, model and variant), and which dimensions of the key a row may differ in from the
first run's (`across`: a phone beside another phone, one model beside another)."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mnnrepro.analysis.prediction_score import yes_no
from mnnrepro.stats import paired_blocks, t_quantile
from mnnrepro.store.schema import open_store

KEY = ("device", "model", "phase", "baseline", "treatment")
ACROSS = ("device", "model")  # the dimensions a comparison may go across
METHOD = "Welch t on the runs' per-block log ratios (unpaired across runs)"
NO_CHANGE = (None, None, None, None)


@dataclass(frozen=True)
class Selection:
    """What to compare. Runs: the given ids or unique prefixes, in that order; else those
    with an engine at one of `engine_commits` (prefixes; in the order given, then by time of
    registration); else every judged run by time of registration. Rows: only these devices,
    models, and pairs with one of these variants (empty: all)."""

    runs: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    engine_commits: tuple[str, ...] = ()
    across: tuple[str, ...] = ()

    def __post_init__(self):
        wrong = sorted(set(self.across) - set(ACROSS))
        if wrong:
            raise ValueError(f"compare --across {wrong[0]}: one of {', '.join(ACROSS)}")

    def keeps(self, row) -> bool:
        return (
            (not self.devices or row.device in self.devices)
            and (not self.models or row.model in self.models)
            and (
                not self.variants or row.baseline in self.variants or row.treatment in self.variants
            )
        )


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
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile(0.5 + ci_level / 2, df) * math.sqrt(va + vb)
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


def selected_runs(db: sqlite3.Connection, selection: Selection) -> list[str]:
    """The run ids the selection names, each judged (a foreign file is refused)."""
    if selection.runs:
        run_ids = [resolve_run(db, given) for given in selection.runs]
    elif selection.engine_commits:
        run_ids = []
        for commit in selection.engine_commits:
            found = [
                r
                for (r,) in db.execute(
                    "SELECT DISTINCT run_id FROM engines JOIN runs USING (run_id) WHERE "
                    "version LIKE ? ORDER BY registered_at, run_id",
                    (f"{commit}%",),
                )
            ]
            if not found:
                raise ValueError(f"compare --engine-commit {commit}: no registered engine has it")
            run_ids += [r for r in found if r not in run_ids]
    else:
        run_ids = [
            r
            for (r,) in db.execute(
                "SELECT run_id FROM runs WHERE judged = 1 ORDER BY registered_at, run_id"
            )
        ]
    if not run_ids:
        raise ValueError("no judged run in the store")
    for run_id in run_ids:
        origin, judged = db.execute(
            "SELECT origin, judged FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if not judged:
            raise ValueError(f"run {run_id[:12]} is {origin}: imported as reported, never judged")
    return run_ids


def treatment_versions(db: sqlite3.Connection, rows: pd.DataFrame) -> list[str]:
    """Per summary row, the version (a build's commit) of its treatment variant's engine, with
    the sha256 prefixes of the patches a build applied on it."""
    versions = {}
    for run, engine, version, record in db.execute(
        "SELECT run_id, engine, version, record FROM engines"
    ):
        patches = json.loads(record).get("source", {}).get("patches") or []
        versions[run, engine] = "+".join([str(version)] + [p["sha256"][:8] for p in patches])
    variants = {
        run_id: json.loads(config).get("variants", {})
        for run_id, config in db.execute("SELECT run_id, config FROM runs")
    }
    return [
        versions.get((r.run_id, variants[r.run_id].get(r.treatment, {}).get("engine")), "")
        for r in rows.itertuples()
    ]


def failed_names(rows: pd.DataFrame, checks: pd.DataFrame) -> list[str]:
    """Per summary row, the names of the failed validity checks (checks_table) of its device
    and model as a whole and of its pair, joined by '; '."""
    failed = {
        (c.run_id, c.device, c.model, c.baseline, c.treatment): c.failed_checks
        for c in checks.itertuples()
        if c.failed_checks
    }
    return [
        "; ".join(
            failed[key]
            for key in (
                (r.run_id, r.device, r.model, None, None),
                (r.run_id, r.device, r.model, r.baseline, r.treatment),
            )
            if key in failed
        )
        for r in rows.itertuples()
    ]


def summary_table(
    db: sqlite3.Connection, run_ids: list[str], selection: Selection, checks: pd.DataFrame
) -> pd.DataFrame:
    """The selected runs' summary rows the selection keeps, in the runs' order, with the
    treatment engine's version and the failed checks' names (a run of emulated CPUs alone has
    none: emulated timings never enter a gain)."""
    table = pd.read_sql_query(
        f"SELECT r.experiment, s.* FROM summary_rows s JOIN runs r USING (run_id) "
        f"WHERE run_id IN ({', '.join('?' * len(run_ids))})",
        db,
        params=run_ids,
    )
    order = table["run_id"].map({run_id: i for i, run_id in enumerate(run_ids)})
    table = table.iloc[order.argsort(kind="stable")]
    table = table[[selection.keeps(r) for r in table.itertuples()]].reset_index(drop=True)
    table["treatment_engine_version"] = treatment_versions(db, table)
    table["failed_checks"] = failed_names(table, checks)
    return table


def checks_table(db: sqlite3.Connection, run_ids: list[str]) -> pd.DataFrame:
    """Per run, device, model and pair (none: the device's own checks), how many validity
    checks passed and the names of those that failed, in the order the run wrote them."""
    groups: dict[tuple, list] = {}
    for run_id in run_ids:
        for experiment, device, model, name, pair, passed in db.execute(
            "SELECT experiment, device, model, name, pair, passed FROM checks "
            "JOIN runs USING (run_id) WHERE run_id = ? ORDER BY checks.rowid",
            (run_id,),
        ):
            baseline, treatment = json.loads(pair) or (None, None)
            key = (run_id, experiment, device, model, baseline, treatment)
            groups.setdefault(key, []).append((name, passed))
    columns = ["run_id", "experiment", "device", "model", "baseline", "treatment"]
    rows = [
        (*key, sum(p for _, p in checks), len(checks), "; ".join(n for n, p in checks if not p))
        for key, checks in groups.items()
    ]
    return pd.DataFrame(rows, columns=[*columns, "checks_passed", "checks", "failed_checks"])


def reference_row(table: pd.DataFrame, first: str, row, across: tuple[str, ...]):
    """The first run's row this row is compared with: the same key but for `across`."""
    match = [k for k in KEY if k not in across]
    ref = table[table["run_id"] == first]
    ref = ref[(ref[match] == pd.Series({k: getattr(row, k) for k in match})).all(axis=1)]
    if len(ref) > 1:
        held = ", ".join(sorted({str(v) for k in across for v in ref[k]}))
        raise ValueError(
            f"the first run {first[:12]} holds {len(ref)} rows a {row.device} {row.model} row is "
            f"compared across ({held}): keep one with --device or --model"
        )
    return None if ref.empty else ref.iloc[0]


def compare_runs(
    store: str, selection: Selection, ci_level: float = 0.95
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the gains: one row per key and run, its gain, interval, verdict and failed checks,
    and beside every run after the first the change of its speedup from the first run's where
    both have blocks; the validity checks per run, device and pair)."""
    db = open_store(store)
    try:
        run_ids = selected_runs(db, selection)
        all_checks = checks_table(db, run_ids)
        table = summary_table(db, run_ids, selection, all_checks)
        checks = all_checks[[selection.keeps(r) for r in all_checks.itertuples()]]
        if table.empty and checks.empty:
            raise ValueError("no summary row or validity check of the selected runs is kept")
        first = run_ids[0]
        changes = []
        for row in table.itertuples():
            ref = (
                None if row.run_id == first else reference_row(table, first, row, selection.across)
            )
            if ref is None:
                changes.append(NO_CHANGE)
                continue
            a = block_log_ratios(db, first, tuple(ref[k] for k in KEY))
            b = block_log_ratios(db, row.run_id, tuple(getattr(row, k) for k in KEY))
            both = len(a) >= 2 and len(b) >= 2
            changes.append((*welch_ratio(a, b, ci_level), METHOD) if both else NO_CHANGE)
    finally:
        db.close()
    change = pd.DataFrame(
        changes, columns=["change_vs_first", "change_ci_low", "change_ci_high", "change_method"]
    )
    return pd.concat([table, change], axis=1), checks.reset_index(drop=True)


def short_version(version: str) -> str:
    """A commit's first 10 characters, with its patches' sha256 prefixes."""
    commit, *patches = version.split("+")
    return "+".join([commit[:10], *patches]) or "-"


def pct(x) -> str:
    return "-" if x is None or pd.isna(x) else f"{x:+.1%}"


def predicted_text(row) -> str:
    """A row's predicted gain and interval (prediction_score), whether the measured interval
    holds it (- where it had no interval) and the log error, or why it was not scored; -
    where the run predicted nothing (a store's older rows have no log error: none shown)."""
    if pd.isna(row.predicted_gain):
        return "-"
    predicted = (
        f"{pct(row.predicted_gain)} [{pct(row.predicted_gain_low)}, {pct(row.predicted_gain_high)}]"
    )
    refused = getattr(row, "not_scored", None)
    if isinstance(refused, str) and refused:
        return f"{predicted}, not scored: {refused}"
    error = getattr(row, "log_error", None)
    told = "" if error is None or pd.isna(error) else f", log error {error:+.2f}"
    return f"{predicted}, held: {yes_no(row.measured_holds_prediction)}{told}"


def markdown(gains: pd.DataFrame, checks: pd.DataFrame) -> str:
    """Both tables of a comparison, the gains first."""
    lines = [
        "## Gains",
        "",
        "| run | experiment | device | model | phase | pair | treatment engine | gain [CI] | "
        "verdict | checks | predicted [interval] | speedup vs the first run [CI] |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in gains.itertuples():
        change = (
            "-"
            if pd.isna(r.change_vs_first)
            else f"x{r.change_vs_first:.3f} [{r.change_ci_low:.3f}, {r.change_ci_high:.3f}]"
        )
        verdict_checks = "pass" if r.checks_passed else f"FAIL: {r.failed_checks or '(unnamed)'}"
        lines.append(
            f"| {r.run_id[:12]} | {r.experiment} | {r.device} | {r.model} | {r.phase} | "
            f"{r.treatment} vs {r.baseline} | {short_version(r.treatment_engine_version)} | "
            f"{pct(r.gain)} [{pct(r.gain_ci_low)}, {pct(r.gain_ci_high)}] | {r.verdict} | "
            f"{verdict_checks} | {predicted_text(r)} | {change} |"
        )
    if gains.empty:
        lines.append("| (no gain: the selected runs judged none) ||||||||||||")
    lines += [
        "",
        "## Validity checks",
        "",
        "| run | experiment | device | model | pair | passed | failed |",
        "|---|---|---|---|---|---:|---|",
    ]
    for r in checks.itertuples():
        pair = "(the device)" if pd.isna(r.treatment) else f"{r.treatment} vs {r.baseline}"
        lines.append(
            f"| {r.run_id[:12]} | {r.experiment} | {r.device} | {r.model} | {pair} | "
            f"{r.checks_passed}/{r.checks} | {r.failed_checks or '-'} |"
        )
    return "\n".join(lines)
