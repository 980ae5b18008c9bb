"""Registering a finished experiment's archive into the store: every member it reads is
checked against the archive's MANIFEST.sha256 first (a damaged or edited archive is refused
with one line and the store is left as it was), then the run's tables and records go in
within one transaction. The same archive registered again adds nothing."""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import sqlite3

import pandas as pd

from mnnrepro.archive.replay import (
    MANIFEST_NAME,
    archived_config,
    archived_member,
    archived_names,
    manifest_entries,
    open_archive,
)
from mnnrepro.errors import DataError
from mnnrepro.store.schema import open_store

INVOCATION_COLUMNS = [
    "device", "model", "variant", "phase", "block", "engine", "engine_version", "thread_num",
    "prompt_tokens", "generate_tokens", "tokens", "seconds", "tps",
]  # fmt: skip
SUMMARY_COLUMNS = [
    "device", "model", "phase", "baseline", "treatment", "n_pairs", "gain", "gain_ci_low",
    "gain_ci_high", "interval", "ci_level", "claim_gain", "tolerance", "expectation",
    "checks_passed", "verdict", "verdict_reason",
]  # fmt: skip


def run_id_of(archive: str) -> str:
    """The run's key: the sha256 of its manifest (which holds every member's sha256)."""
    with open_archive(archive) as tar:
        return hashlib.sha256(tar.extractfile(MANIFEST_NAME).read()).hexdigest()


# the columns a table of any version has; the others are None where an older table has none
# (bench.csv kept the runtime settings in one `runtime` column before they had their own)
REQUIRED = {"device", "model", "variant", "phase", "block", "tps", "baseline", "treatment"}


def archived_table(archive: str, name: str, columns: list[str]) -> list[tuple]:
    """A CSV member's rows (the columns asked, None where a value is missing), hash-checked."""
    data = archived_member(archive, name)
    if data is None:
        raise DataError(archive, f"{name} is not in the archive's {MANIFEST_NAME}")
    table = pd.read_csv(io.BytesIO(data))
    missing = [c for c in columns if c not in table.columns and c in REQUIRED]
    if missing:
        raise DataError(archive, f"{name} lacks the columns {missing}")
    table = table.reindex(columns=columns)
    table = table.astype(object).where(table.notna(), None)
    return [tuple(row) for row in table.itertuples(index=False)]


def archived_records(archive: str, names: set[str], part: str) -> list[dict]:
    """Every JSON member under results/<experiment>/<part>/ (or results/engines/), checked."""
    return [
        json.loads(archived_member(archive, name))
        for name in sorted(names)
        if part in name and name.endswith(".json")
    ]


def register_archive(store: str, archive: str) -> tuple[str, bool]:
    """(run id, whether it was added: False where the store holds it already)."""
    run_id = run_id_of(archive)
    # everything read and checked against the manifest before the store is touched, even
    # where the run is there already: an edited copy under the same manifest is refused
    rows = read_run(archive)
    db = open_store(store)
    try:
        if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
            return run_id, False
        with db:  # one transaction: all of the run, or nothing
            write_run(db, run_id, archive, rows)
        return run_id, True
    finally:
        db.close()


def check_every_member(archive: str) -> None:
    """Every member the manifest lists is there with its sha256 (not only those read)."""
    with open_archive(archive) as tar:
        listed = manifest_entries(tar.extractfile(MANIFEST_NAME).read().decode())
        for name, digest in listed.items():
            if hashlib.sha256(tar.extractfile(name).read()).hexdigest() != digest:
                raise DataError(archive, f"{name} does not match the archive's {MANIFEST_NAME}")


def read_run(archive: str) -> dict:
    check_every_member(archive)
    config = archived_config(archive)
    experiment = config["experiment"]
    names = archived_names(archive)
    root = f"results/{experiment}"
    return {
        "experiment": experiment,
        "config": config,
        "invocations": archived_table(archive, f"{root}/bench.csv", INVOCATION_COLUMNS),
        "summary": archived_table(archive, f"{root}/summary.csv", SUMMARY_COLUMNS),
        "summary_md": (archived_member(archive, f"{root}/summary.md") or b"").decode("utf-8"),
        "validity": archived_records(archive, names, f"{root}/validity/"),
        "devices": archived_records(archive, names, f"{root}/devices/"),
        "engines": archived_records(archive, names, "results/engines/"),
    }


def write_run(db: sqlite3.Connection, run_id: str, archive: str, run: dict) -> None:
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    db.execute(
        "INSERT INTO runs VALUES (?, ?, 'archive', 1, ?, ?, ?, ?)",
        (
            run_id,
            run["experiment"],
            str(archive),
            now,
            json.dumps(run["config"], sort_keys=True),
            run["summary_md"],
        ),
    )
    slots = ", ".join("?" * (len(INVOCATION_COLUMNS) + 1))
    db.executemany(
        f"INSERT INTO invocations VALUES ({slots})", [(run_id, *r) for r in run["invocations"]]
    )
    slots = ", ".join("?" * (len(SUMMARY_COLUMNS) + 1))
    db.executemany(
        f"INSERT INTO summary_rows VALUES ({slots})", [(run_id, *r) for r in run["summary"]]
    )
    db.executemany(
        "INSERT INTO checks VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run_id,
                v["device"],
                v["model"],
                c["name"],
                json.dumps(c.get("pair")),
                int(c["passed"]),
                c["evidence"],
            )
            for v in run["validity"]
            for c in v["checks"]
        ],
    )
    db.executemany(
        "INSERT INTO devices VALUES (?, ?, ?)",
        [(run_id, f["device"], json.dumps(f, sort_keys=True)) for f in run["devices"]],
    )
    db.executemany(
        "INSERT INTO engines VALUES (?, ?, ?, ?, ?)",
        [
            (run_id, e["engine"], e["kind"], e.get("version"), json.dumps(e, sort_keys=True))
            for e in run["engines"]
        ],
    )
