"""The engine records a job reads (engine.json / build.json), each checked against its schema
and typed with its kind where it is read (engines.registry.EngineRecord). Apart from the
registry: the builds' environment reads no record this way (it carries no table library)."""

from __future__ import annotations

from mnnrepro.engines.registry import EngineRecord
from mnnrepro.records import read_record


def engine_records(paths) -> dict[str, EngineRecord]:
    """Engine name -> its record, for the engine records at paths (each checked as one)."""
    records = (EngineRecord.of(read_record(path, "engine")) for path in paths)
    return {record.name: record for record in records}
