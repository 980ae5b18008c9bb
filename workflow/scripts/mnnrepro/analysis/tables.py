"""Raw invocation records -> the tidy table bench.csv (one row per variant x phase x rep)."""

from __future__ import annotations

import pandas as pd

from mnnrepro.files import read_json

# Columns that identify one measured configuration (compare-llama-bench's "key properties").
KEY_COLUMNS = ["experiment", "device", "model", "variant", "phase"]


BENCH_COLUMNS = [
    *KEY_COLUMNS,
    "block",
    "position",
    "run_order",
    "tokens",
    "seconds",
    "tps",
    "engine",
    "engine_version",
    "runtime",
    "prompt_tokens",
    "generate_tokens",
    "warmup",
    "device_supports",
    "emulated",
    "load_s",
    "attempts",
    "max_temp_before_c",
    "other_load",
    "raw_file",
]


def rows_from_record(
    record: dict, experiment: str, model: str, emulated: bool, raw_file: str
) -> list[dict]:
    inv = record["invocation"]
    spec = record["spec"]
    temps = record.get("thermal_before_c") or {}
    base = {
        "experiment": experiment,
        "device": record["device"],
        "model": model,
        "variant": record["variant"],
        "block": inv["block"],
        "position": inv["position"],
        "run_order": inv["run_order"],
        "engine": spec["engine"]["engine"],
        "engine_version": spec["engine"]["version"],
        "runtime": ";".join(f"{k}={v}" for k, v in sorted(spec["runtime"].items())),
        "prompt_tokens": record["bench"]["prompt_tokens"],
        "generate_tokens": record["bench"]["generate_tokens"],
        "warmup": record["bench"]["warmup"],
        "device_supports": record["engine"].get("device_supports", ""),
        "emulated": emulated,
        "load_s": record.get("load_s"),
        "attempts": record.get("attempts", 1),
        "max_temp_before_c": max(temps.values()) if temps else None,
        "other_load": record.get("other_load"),
        "raw_file": raw_file,
    }
    return [
        {
            **base,
            "phase": r["phase"],
            "tokens": r["tokens"],
            "seconds": r["seconds"],
            "tps": r["tps"],
        }
        for r in record["results"]
    ]


def bench_table(indexes: list[dict], resolve=str) -> pd.DataFrame:
    """indexes: parsed run indexes (see bench rules), each with experiment/model/device/runs.

    Raw paths in an index are relative to the working directory; `resolve` maps one to where
    the file is now (a replay restores them elsewhere); `raw_file` keeps the recorded path.
    """
    rows = []
    for index in indexes:
        for entry in index["runs"]:
            record = read_json(resolve(entry["raw"]))
            if record.get("status") != "ok":
                continue  # a failed invocation of an emulated device: kept raw, no speed
            rows.extend(
                rows_from_record(
                    record, index["experiment"], index["model"], index["emulated"], entry["raw"]
                )
            )
    table = pd.DataFrame(rows, columns=BENCH_COLUMNS)
    return table.sort_values(["device", "model", "run_order", "phase"]).reset_index(drop=True)
