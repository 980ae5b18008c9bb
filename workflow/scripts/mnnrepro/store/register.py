"""Registering a finished experiment's archive into the store: every member is checked
against the archive's MANIFEST.sha256 first (a damaged or edited archive is refused
with one line and the store is left as it was), then the run's tables and records go in
within one transaction. The same archive registered again adds nothing."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3

import pandas as pd

from mnnrepro.analysis.prediction_score import SCORE_COLUMNS
from mnnrepro.archive.replay import (
    CONFIG_NAME,
    MANIFEST_NAME,
    config_of,
    manifest_entries,
    open_archive,
)
from mnnrepro.config import experiment_named
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.errors import DataError
from mnnrepro.files import plain
from mnnrepro.store.schema import insert_once, utc_now

INVOCATION_COLUMNS = [
    "device",
    "model",
    "variant",
    "phase",
    "block",
    "engine",
    "engine_version",
    "thread_num",
    "prompt_tokens",
    "generate_tokens",
    "tokens",
    "seconds",
    "tps",
]
# the columns of summary.csv the store keeps per run (analysis.summary.SUMMARY_COLUMNS: all)
STORED_SUMMARY_COLUMNS = [
    "device",
    "model",
    "phase",
    "baseline",
    "treatment",
    "n_pairs",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "interval",
    "ci_level",
    "claim_gain",
    "tolerance",
    "expectation",
    "checks_passed",
    "verdict",
    "verdict_reason",
    *SCORE_COLUMNS,
]


def verified_members(archive: str) -> tuple[str, dict[str, bytes]]:
    """(the run's id: the sha256 of its manifest, which holds every member's sha256; every
    member the manifest lists, each checked against it), read in one pass over the archive."""
    with open_archive(archive) as tar:
        manifest = tar.extractfile(MANIFEST_NAME).read()
        members = {}
        for name, digest in manifest_entries(manifest.decode()).items():
            data = tar.extractfile(name).read()
            if hashlib.sha256(data).hexdigest() != digest:
                raise DataError(archive, f"{name} does not match the archive's {MANIFEST_NAME}")
            members[name] = data
    return hashlib.sha256(manifest).hexdigest(), members


# the columns a table of any version has; the others are None where an older table has none
# (bench.csv kept the runtime settings in one `runtime` column before they had their own)
REQUIRED = {"device", "model", "variant", "phase", "block", "tps", "baseline", "treatment"}


def archived_table(archive: str, members: dict, name: str, columns: list[str]) -> list[tuple]:
    """A CSV member's rows (the columns asked, None where a value is missing)."""
    data = members.get(name)
    if data is None:
        raise DataError(archive, f"{name} is not in the archive's {MANIFEST_NAME}")
    table = pd.read_csv(io.BytesIO(data))
    missing = [c for c in columns if c not in table.columns and c in REQUIRED]
    if missing:
        raise DataError(archive, f"{name} lacks the columns {missing}")
    table = table.reindex(columns=columns)
    table = table.astype(object).where(table.notna(), None)
    return [tuple(row) for row in table.itertuples(index=False)]


def archived_records(members: dict, part: str) -> list[dict]:
    """Every JSON member under results/<experiment>/<part>/ (or results/engines/)."""
    return [
        json.loads(data)
        for name, data in sorted(members.items())
        if part in name and name.endswith(".json")
    ]


def register_archive(store: str, archive: str) -> tuple[str, bool]:
    """(run id, whether it was added: False where the store holds it already). Every member
    is read and checked before the store is touched, even where the run is there already:
    an edited copy under the same manifest is refused."""
    run_id, members = verified_members(archive)
    run = read_run(archive, members)
    return run_id, insert_once(store, run_id, lambda db: write_run(db, run_id, archive, run))


def read_run(archive: str, members: dict[str, bytes]) -> dict:
    config = config_of(archive, members.get(CONFIG_NAME))
    experiment = experiment_named(config)
    if experiment is None:
        raise DataError(archive, f"{CONFIG_NAME} is not an experiment's config")
    root = f"results/{experiment}"
    return {
        "experiment": experiment,
        "config": config,
        "invocations": archived_table(archive, members, f"{root}/bench.csv", INVOCATION_COLUMNS),
        "summary": archived_table(archive, members, f"{root}/summary.csv", STORED_SUMMARY_COLUMNS),
        "summary_md": members.get(f"{root}/summary.md", b"").decode("utf-8"),
        "validity": archived_records(members, f"{root}/validity/"),
        "devices": archived_records(members, f"{root}/devices/"),
        "engines": archived_records(members, "results/engines/"),
    }


def write_run(db: sqlite3.Connection, run_id: str, archive: str, run: dict) -> None:
    db.execute(
        "INSERT INTO runs VALUES (?, ?, 'archive', 1, ?, ?, ?, ?)",
        (
            run_id,
            run["experiment"],
            str(archive),
            utc_now(),
            json.dumps(run["config"], sort_keys=True),
            run["summary_md"],
        ),
    )
    slots = ", ".join("?" * (len(INVOCATION_COLUMNS) + 1))
    db.executemany(
        f"INSERT INTO invocations VALUES ({slots})", [(run_id, *r) for r in run["invocations"]]
    )
    slots = ", ".join("?" * (len(STORED_SUMMARY_COLUMNS) + 1))
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
            (run_id, e.name, e.kind.kind, e.version, json.dumps(e, sort_keys=True, default=plain))
            for e in map(EngineRecord.of, run["engines"])
        ],
    )
