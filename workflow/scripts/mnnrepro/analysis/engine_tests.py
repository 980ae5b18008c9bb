"""The engines' own tests, read (runs/engine_tests.py runs them): one table of every test's
outcome per device and engine, the validity check it gives a pair, and its section of
summary.md."""

from __future__ import annotations

import pandas as pd

from mnnrepro.engines.pairs import Pair
from mnnrepro.runs.engine_tests import NO_SUITE, PASS

COLUMNS = [
    "device",
    "engine",
    "test",
    "outcome",
    "tests_run",
    "failed",
    "died_in",
    "note",
    "seconds",
    "returncode",
    "command_line",
]


def engine_tests_table(records: list[dict]) -> pd.DataFrame:
    """engine_tests.csv: a row per device x engine x named test; an engine without a suite
    has one row, its outcome `no test suite`, saying why."""
    rows = []
    for record in records:
        head = {"device": record["device"], "engine": record["engine"]}
        if record["no_suite"] is not None:
            rows.append({**head, "test": "", "outcome": NO_SUITE, "note": record["no_suite"]})
        for test in record["tests"]:
            rows.append(
                {
                    **head,
                    **{k: test[k] for k in COLUMNS if k in test and k not in head},
                    "tests_run": " ".join(test["tests_run"]),
                    "failed": " ".join(test["failed"]),
                }
            )
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["device", "engine", "test"], kind="stable").reset_index(drop=True)


def engine_tests_check(pair: Pair, records: dict[str, dict]) -> list[dict]:
    """A pair of two different engines on one device, both with a suite: its treatment
    passes every test its baseline passes there (records: engine -> its test record on this
    device). Nothing to check for one engine with itself, or an engine without a suite."""
    ours = [records.get(pair.baseline_engine), records.get(pair.treatment_engine)]
    if pair.baseline_engine == pair.treatment_engine or any(
        r is None or r["no_suite"] for r in ours
    ):
        return []
    base, treat = ({t["test"]: t for t in r["tests"]} for r in ours)
    broken = {
        name: treat[name]
        for name in base
        if base[name]["outcome"] == PASS and treat.get(name, {}).get("outcome") != PASS
    }
    evidence = "; ".join(
        f"{name}: {t['outcome']}"
        + (f" in {t['died_in']}" if t.get("died_in") else "")
        + (f" ({', '.join(t['failed'])})" if t.get("failed") else "")
        for name, t in broken.items()
    )
    return [
        {
            "name": f"engine's own tests: {pair.treatment} passes what {pair.baseline} passes",
            "pair": list(pair.names),
            "passed": not broken,
            "evidence": evidence
            or f"{sum(t['outcome'] == PASS for t in treat.values())}/{len(treat)} tests pass "
            f"in {pair.treatment_engine}, every one {pair.baseline_engine} passes among them",
            "details": {name: t["outcome"] for name, t in broken.items()},
        }
    ]


def engine_tests_section(table: pd.DataFrame) -> list[str]:
    """summary.md's section: each engine's tests per device, failures named."""
    out = [
        "",
        "## The engines' own tests",
        "",
        "Each named test of the engine's own suite, a process of its own on the device "
        "(`engine_tests`; a pair is invalid where its treatment fails a test its baseline "
        "passes there).",
        "",
        "| device | engine | test | outcome | detail |",
        "|---|---|---|---|---|",
    ]
    for row in table.astype(object).where(table.notna(), "").itertuples():
        detail = row.failed or row.note or (f"died in {row.died_in}" if row.died_in else "")
        out.append(
            f"| {row.device} | {row.engine} | {row.test or '-'} | {row.outcome} | {detail or '-'} |"
        )
    return out
