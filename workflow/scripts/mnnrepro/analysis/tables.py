"""Raw invocation records -> the tidy table bench.csv (one row per variant x phase x rep)."""

from __future__ import annotations

import json

import pandas as pd

from mnnrepro.config import SME2_SETTINGS
from mnnrepro.errors import DataError
from mnnrepro.phases import SPANNING_PHASES, VISION_PHASES
from mnnrepro.records import HINTS, check_sha256, read_record
from mnnrepro.runs.power import phase_joules

# Columns that identify one measured configuration (compare-llama-bench's "key properties").
KEY_COLUMNS = ["experiment", "device", "model", "variant", "phase"]


# the variant's runtime settings, one column each (the schema's `runtime` keys with a default)
RUNTIME_COLUMNS = ("backend_type", "thread_num", "precision", "memory", "power")
# ... and those without one (MNN's SME2 settings, ONNX Runtime's session options as one JSON
# text): a column only where a variant sets one, so a run that sets none has the table it
# always had (and an archive replays to it, byte for byte)
OPTIONAL_RUNTIME_COLUMNS = (*SME2_SETTINGS, "session_options")
BENCH_COLUMNS = [
    *KEY_COLUMNS,
    "block",
    "position",
    "run_order",
    "tokens",
    "seconds",
    "tps",
    "pixels_mp",
    "engine",
    "engine_version",
    *RUNTIME_COLUMNS,
    "prompt_tokens",
    "generate_tokens",
    "warmup",
    "context_start",
    "ran_settings",
    "ran_warmup",
    "settings_mismatch",
    "wall_s",
    "device_s",
    "timing_plausible",
    "governor",
    "freq_before_mhz",
    "freq_after_mhz",
    "device_supports",
    "emulated",
    "load_s",
    "attempts",
    "max_temp_before_c",
    "thermal_cool",
    "thermal_wait_s",
    "thermal_gated_zones",
    "other_load",
    "load_before",
    "quiet_wait_s",
    "under_load",
    "power_source",
    "power_w",
    "power_window",
    "joules_per_token",
    "charging",
    "build_fingerprint",
    "screen",
    "remeasure",
    "superseded",
    "superseded_reasons",
    "raw_file",
    "raw_sha256",
]

# an engine's tok/s must be its tokens / seconds (llm_bench prints both from one timer)
TPS_RELATIVE_TOLERANCE = 1e-3


def under_load(record: dict, limit: float | None) -> bool:
    """Measured under load: the quiet gate timed out (bench.max_other_load), or other work
    during the invocation kept more than the limit of CPUs busy."""
    if limit is None:
        return False
    gate = record.get("quiet_gate") or {}
    during = record.get("other_load")
    return gate.get("quiet") is False or (during is not None and during > limit)


def settings_mismatch(asked: dict, ran: dict) -> str:
    """Settings the engine says it ran that differ from the variant's runtime ('' if none)."""
    return "; ".join(
        f"{key}: asked {asked[key]}, ran {ran[key]}"
        for key in sorted(asked)
        if ran.get(key) is not None and str(ran[key]).lower() != str(asked[key]).lower()
    )


def timing_plausible(record: dict) -> bool | None:
    """The engine's own times of the measured run must fit in the invocation's wall time
    (which also holds the load and the warm-up): a speed the wall time cannot explain is not
    trusted. None where the wall time was not recorded."""
    wall = record.get("wall_s")
    if wall is None:
        return None
    measured = sum(r["seconds"] for r in record["results"] if r["phase"] not in SPANNING_PHASES)
    return measured <= wall * 1.01


def cpufreq_summary(record: dict) -> dict:
    """Governors in use and the fastest core's current MHz, before and after the invocation."""
    before, after = record.get("cpufreq_before") or {}, record.get("cpufreq_after") or {}

    def fastest(cores):
        return max((c["cur_khz"] for c in cores.values()), default=None)

    mhz = {
        k: (v // 1000 if v is not None else None)
        for k, v in (("before", fastest(before)), ("after", fastest(after)))
    }
    return {
        "governor": "/".join(sorted({c["governor"] for c in (*before.values(), *after.values())})),
        "freq_before_mhz": mhz["before"],
        "freq_after_mhz": mhz["after"],
    }


def check_speeds(record: dict, path: str) -> None:
    """Each phase's tok/s must be its tokens / seconds: an edited speed is refused."""
    for i, r in enumerate(record["results"]):
        implied = r["tokens"] / r["seconds"]
        if abs(r["tps"] - implied) > TPS_RELATIVE_TOLERANCE * implied:
            raise DataError(
                path,
                f"field `results.{i}.tps` is {r['tps']:.6g} tok/s, but its tokens/seconds "
                f"give {implied:.6g}",
                HINTS["raw_record"],
            )


def gated_max(record: dict, temps: dict) -> float | None:
    """The hottest gated temperature before the invocation; records from before the gate chose
    its zones: the hottest zone."""
    gate = record.get("thermal_gate") or {}
    if "gated_on" in gate:
        return gate.get("hottest_gated_c")
    return max(temps.values()) if temps else None


def thermal_outcome(record: dict) -> dict:
    gate = record.get("thermal_gate") or {}
    return {
        "thermal_cool": gate.get("cool"),
        "thermal_wait_s": gate.get("waited_s"),
        "thermal_gated_zones": len(gate["gated_on"]) if "gated_on" in gate else None,
    }


def rows_from_record(
    record: dict,
    experiment: str,
    model: str,
    emulated: bool,
    raw_file: str,
    raw_sha256: str,
    max_other_load: float | None = None,
    superseded: list[dict] | None = (),
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
        **runtime_columns(spec["runtime"]),
        "prompt_tokens": record["bench"]["prompt_tokens"],
        "generate_tokens": record["bench"]["generate_tokens"],
        "warmup": record["bench"]["warmup"],
        **ran_columns(record),
        "wall_s": record.get("wall_s"),
        # the invocation's whole device time (cool-down, gates, run, vision, teardown)
        "device_s": (record.get("device_time_s") or {}).get("total"),
        "timing_plausible": timing_plausible(record),
        **cpufreq_summary(record),
        "device_supports": record["engine"].get("device_supports", ""),
        "emulated": emulated,
        "load_s": record.get("load_s"),
        "attempts": record.get("attempts", 1),
        **gate_columns(record, temps, max_other_load),
        **remeasure_columns(record, superseded),
        "raw_file": raw_file,
        "raw_sha256": raw_sha256,
        **phone_columns(record),
    }
    energy = stretch_joules(record)
    return [{**base, **phase_columns(r, energy.get(r["phase"], {}))} for r in record["results"]]


def phase_columns(result: dict, energy: dict) -> dict:
    """One measured phase's columns: its energy (where sampled), tokens, time and speed."""
    return {
        **{key: energy.get(key) for key in ("power_w", "power_window", "joules_per_token")},
        "phase": result["phase"],
        "tokens": result["tokens"],
        "seconds": result["seconds"],
        "tps": result["tps"],
        "pixels_mp": result.get("pixels_mp"),  # the vision phase's: what the encoder took in
        "context_start": result.get("context_start"),
    }


def gate_columns(record: dict, temps: dict, max_other_load) -> dict:
    """What the thermal and quiet gates saw before the invocation, and the load during it."""
    quiet = record.get("quiet_gate") or {}
    return {
        # the hottest temperature the gate waited on (every zone's value is in the raw record)
        "max_temp_before_c": gated_max(record, temps),
        # the thermal gate's outcome: False = it timed out with the device still hot
        **thermal_outcome(record),
        "other_load": record.get("other_load"),
        "load_before": quiet.get("load"),
        "quiet_wait_s": quiet.get("waited_s"),
        "under_load": under_load(record, max_other_load),
    }


def ran_columns(record: dict) -> dict:
    """The settings the engine says it ran with, its warm-up, and where they differ from the
    variant's (settings_mismatch)."""
    ran = record.get("ran") or {}
    return {
        "ran_settings": ";".join(f"{k}={v}" for k, v in sorted(ran.items()) if k != "warmup"),
        "ran_warmup": ran.get("warmup", record.get("warmup")),
        "settings_mismatch": settings_mismatch(record["spec"]["runtime"], ran),
    }


def remeasure_columns(record: dict, superseded: list[dict] | None) -> dict:
    """The label it was measured again under, and every earlier measurement it superseded."""
    return {
        "remeasure": record.get("remeasure", ""),
        "superseded": len(superseded) if superseded is not None else None,
        "superseded_reasons": "; ".join(
            f"{s['superseded_at']}: {s['reason']}" for s in superseded or []
        ),
    }


def phone_columns(record: dict) -> dict:
    """The power source, the battery's charging state, the build and the screen: what a
    phone's measurement depends on beyond its CPUs."""
    power = record.get("power") or {}
    screen = record.get("screen_before") or {}
    return {
        "power_source": power.get("source") or power.get("unavailable"),
        "charging": (record.get("battery_after") or {}).get("charging"),
        "build_fingerprint": record.get("build_fingerprint"),
        "screen": (
            "/".join(str(screen.get(k)) for k in ("wakefulness", "display")) if screen else None
        ),
    }


def stretch_joules(record: dict) -> dict[str, dict]:
    """Each phase's energy over the samples of the command that ran it: the text benchmark's,
    and a vision step's own (runs/benchmark.py vision_step) for the phases it measured."""
    step = record.get("vision_step")
    own = {r["phase"] for r in record["results"]} & set(VISION_PHASES) if step else set()
    text = [r for r in record["results"] if r["phase"] not in own]
    power = record.get("power") or {}
    energy = phase_joules(power, text, record.get("wall_s"), record.get("phase_clock"))
    if step:
        vision = [r for r in record["results"] if r["phase"] in own]
        tool = step["tool"]
        energy.update(phase_joules(step["power"], vision, tool["wall_s"], step["phase_clock"]))
    return energy


def bench_table(
    indexes: dict[str, dict], resolve=str, max_other_load: float | None = None
) -> pd.DataFrame:
    """indexes: run index path -> parsed run index (see bench rules), each with
    experiment/model/device/runs; every raw file must still have the sha256 its index recorded.

    Raw paths in an index are relative to the working directory; `resolve` maps one to where
    the file is now (a replay restores them elsewhere); `raw_file` keeps the recorded path.
    """
    rows = []
    for index_path, index in indexes.items():
        for entry in index["runs"]:
            path = resolve(entry["raw"])
            record = read_record(path, "raw_record")
            check_sha256(path, entry["sha256"], index_path, HINTS["raw_record"])
            # None: an index older than the trace (how often it was measured is not known)
            superseded = entry.get("superseded")
            for earlier in superseded or []:  # the re-measurement's trace is part of the record
                check_sha256(
                    resolve(earlier["raw"]), earlier["sha256"], index_path, HINTS["raw_record"]
                )
            if record.get("status") != "ok":
                continue  # a failed invocation of an emulated device: kept raw, no speed
            check_speeds(record, path)
            rows.extend(
                rows_from_record(
                    record,
                    index["experiment"],
                    index["model"],
                    index["emulated"],
                    entry["raw"],
                    entry["sha256"],
                    max_other_load,
                    superseded,
                )
            )
    optional = [c for c in OPTIONAL_RUNTIME_COLUMNS if any(c in row for row in rows)]
    at = BENCH_COLUMNS.index(RUNTIME_COLUMNS[-1]) + 1
    table = pd.DataFrame(rows, columns=[*BENCH_COLUMNS[:at], *optional, *BENCH_COLUMNS[at:]])
    return table.sort_values(["device", "model", "run_order", "phase"]).reset_index(drop=True)


def runtime_columns(runtime: dict) -> dict:
    """A record's runtime settings as bench.csv's columns (the optional ones where set)."""
    optional = {
        key: json.dumps(runtime[key], sort_keys=True)
        if isinstance(runtime[key], dict)
        else runtime[key]
        for key in OPTIONAL_RUNTIME_COLUMNS
        if key in runtime
    }
    return {**{key: runtime.get(key) for key in RUNTIME_COLUMNS}, **optional}


def bench_table_from(
    index_paths: list[str], resolve=str, max_other_load: float | None = None
) -> pd.DataFrame:
    """bench.csv's content, derived from the run index files and the raw records they list."""
    indexes = {p: read_record(p, "run_index") for p in index_paths}
    return bench_table(indexes, resolve, max_other_load)
