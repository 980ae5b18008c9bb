"""The results store's schema: one SQLite file (the standard library's sqlite3: no server, no
dependency, and the format llama.cpp's `llama-bench -o sql` writes), versioned in its `meta`
table. A run is keyed by the sha256 of its archive's MANIFEST.sha256, so one run registered
twice is one run. docs/store.md documents every column and maps them to llama-bench's table
and to PyTorch's v3 benchmark record."""

from __future__ import annotations

import datetime
import sqlite3
from pathlib import Path

from mnnrepro.errors import DataError

SCHEMA_VERSION = 3
# summary_rows' columns of schema 2: a prediction's score (analysis/prediction_score.py)
PREDICTION_COLUMNS = (
    "predicted_gain REAL",
    "predicted_gain_low REAL",
    "predicted_gain_high REAL",
    "measured_holds_prediction INTEGER",
    "prediction_holds_measured INTEGER",
)
# of schema 3: the score's log error, and why a prediction was not scored against a row
SCORE_DETAIL_COLUMNS = ("log_error REAL", "not_scored TEXT")
# what each older schema lacks, added in place when such a store is opened (its rows keep
# null there: their runs predicted nothing, or were not scored by log error)
MIGRATIONS = {
    1: [f"ALTER TABLE summary_rows ADD COLUMN {c}" for c in PREDICTION_COLUMNS],
    2: [f"ALTER TABLE summary_rows ADD COLUMN {c}" for c in SCORE_DETAIL_COLUMNS],
}
SCORED = ", ".join(PREDICTION_COLUMNS + SCORE_DETAIL_COLUMNS)

DDL = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,      -- sha256 of the archive's MANIFEST.sha256 (a foreign file's)
    experiment TEXT NOT NULL,     -- a foreign file: its file name
    origin TEXT NOT NULL,         -- archive | foreign:llama-bench | foreign:llm_bench
    judged INTEGER NOT NULL,      -- 0: foreign numbers, without gate, schedule or verdict
    source TEXT NOT NULL,         -- the file it was registered from, as given
    registered_at TEXT NOT NULL,  -- UTC, ISO 8601
    config TEXT NOT NULL,         -- the resolved config, JSON ({{}} for a foreign file)
    summary_md TEXT NOT NULL      -- the run's summary.md ('' for a foreign file)
);
CREATE TABLE foreign_results (    -- what another tool reported, as it reported it
    run_id TEXT NOT NULL REFERENCES runs, engine TEXT, engine_version TEXT, model TEXT,
    phase TEXT, prompt_tokens INTEGER, generate_tokens INTEGER, depth INTEGER,
    threads INTEGER, tps_mean REAL, tps_sd REAL, samples TEXT  -- JSON list, or null
);
CREATE TABLE invocations (        -- bench.csv: one row per variant x phase x repetition
    run_id TEXT NOT NULL REFERENCES runs, device TEXT, model TEXT, variant TEXT,
    phase TEXT, block INTEGER, engine TEXT, engine_version TEXT, thread_num INTEGER,
    prompt_tokens INTEGER, generate_tokens INTEGER, tokens INTEGER, seconds REAL, tps REAL
);
CREATE TABLE summary_rows (       -- summary.csv: one row per device x model x phase x pair
    run_id TEXT NOT NULL REFERENCES runs, device TEXT, model TEXT, phase TEXT,
    baseline TEXT, treatment TEXT, n_pairs INTEGER, gain REAL, gain_ci_low REAL,
    gain_ci_high REAL, interval TEXT, ci_level REAL, claim_gain REAL, tolerance REAL,
    expectation TEXT, checks_passed INTEGER, verdict TEXT, verdict_reason TEXT,
    {SCORED}
);
CREATE TABLE checks (             -- validity/<device>/<model>.json: every check with evidence
    run_id TEXT NOT NULL REFERENCES runs, device TEXT, model TEXT, name TEXT,
    pair TEXT, passed INTEGER, evidence TEXT
);
CREATE TABLE devices (run_id TEXT NOT NULL REFERENCES runs, device TEXT, facts TEXT);
CREATE TABLE engines (            -- build.json / engine.json: commit, flags, patches, files
    run_id TEXT NOT NULL REFERENCES runs, engine TEXT, kind TEXT, version TEXT, record TEXT
);
"""


def open_store(path: str | Path) -> sqlite3.Connection:
    """The store at path, created with this schema if it is new, brought up to it if it is of
    an older one (MIGRATIONS); a store of another schema version is refused with one line."""
    new = not Path(path).exists()
    db = sqlite3.connect(path)
    if new:
        with db:
            db.executescript(DDL)
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        return db
    try:
        (version,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except (sqlite3.DatabaseError, TypeError) as err:
        db.close()
        raise DataError(path, f"not a results store ({err})") from None
    if int(version) in MIGRATIONS:
        with db:  # every step from the store's schema up to this one, in order
            for step in range(int(version), SCHEMA_VERSION):
                for statement in MIGRATIONS[step]:
                    db.execute(statement)
            db.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )
        version = SCHEMA_VERSION
    if int(version) != SCHEMA_VERSION:
        db.close()
        raise DataError(path, f"a results store of schema {version}, not {SCHEMA_VERSION}")
    return db


def insert_once(store: str | Path, run_id: str, write) -> bool:
    """Add a run to the store with write(db), in one transaction (all of it, or nothing);
    False, adding nothing, where the store holds the run already."""
    db = open_store(store)
    try:
        if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
            return False
        with db:
            write(db)
        return True
    finally:
        db.close()


def utc_now() -> str:
    """When a run is registered: UTC, ISO 8601, to the second."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
