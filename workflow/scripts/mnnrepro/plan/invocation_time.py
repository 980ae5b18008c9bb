"""Seconds one benchmark invocation should take on a device, from what is known before the
run: the model's bytes and arithmetic (its layout.json, models/mnn_layout.py) and the device's
speed as its earlier runs of other experiments recorded it (their bench.csv and their models'
layouts). The dry run prices a run with it (plan/overview.py) where this experiment has no
earlier run on the device; without either, the device kind's assumption stands.

From each earlier invocation at the same thread count: the prefill rate (prompt tokens x the
model's operations per prompt token / prefill seconds), the decode rate (generated tokens x
the bytes a decode step reads / decode seconds), the load rate (the weight file's bytes / the
engine's load time) and the rest of its wall time (process start, the vision phase, gates);
the medians of each. An invocation of this model then takes (warm-ups + 1) x (prefill +
decode) + load + the rest: a measured speed applied to this model's arithmetic, not a
measurement of it (a larger model's prefill may run at another rate)."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from mnnrepro.sections import Bench


@dataclass(frozen=True)
class DeviceSpeed:
    """What a device's earlier invocations at one thread count say of its speed."""

    prefill_ops_per_s: float
    decode_bytes_per_s: float
    load_bytes_per_s: float
    other_s: float  # wall time that is neither the timed phases nor the load
    invocations: int
    experiments: tuple[str, ...]


def layout_of(model: str, root: Path) -> dict | None:
    path = root / "results" / "models" / model / "layout.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


# what a reader of an earlier run's table says where a column is missing
TABLE_HINT = "a table the workflow wrote: restore it, or delete it and run again"
SPEED_COLUMNS = [
    *("experiment", "device", "model", "variant", "phase", "thread_num", "emulated"),
    *("seconds", "tokens", "wall_s", "load_s", "warmup", "raw_file"),
]


def invocations_of(bench_csv: Path, device: str, threads: int) -> list[dict]:
    """One dict per earlier invocation on the device at that thread count, with its prefill
    and decode seconds and tokens (emulated devices' timings are left out)."""
    # pulls jsonschema: an earlier run's table only
    from mnnrepro.records import read_rows

    runs: dict[str, dict] = {}
    for row in read_rows(bench_csv, SPEED_COLUMNS, TABLE_HINT):
        if (
            row["device"] != device
            or row["emulated"] == "True"
            or row["thread_num"] != str(threads)
            or row["phase"] not in ("prefill", "decode")
            or not row["wall_s"]
        ):
            continue
        run = runs.setdefault(row["raw_file"], {"row": row})
        run[row["phase"]] = (float(row["seconds"]), float(row["tokens"]))
    return [r for r in runs.values() if "prefill" in r and "decode" in r]


def device_speed(device: str, threads: int, root: Path, exclude: str) -> DeviceSpeed | None:
    """The device's speed from every other experiment's bench.csv under root/results whose
    model has a layout; None without one."""
    rates: dict[str, list[float]] = {"prefill": [], "decode": [], "load": [], "other": []}
    seen = set()
    for bench_csv in sorted((root / "results").glob("*/bench.csv")):
        if bench_csv.parent.name == exclude:
            continue
        for run in invocations_of(bench_csv, device, threads):
            row = run["row"]
            layout = layout_of(row["model"], root)
            if layout is None or not row.get("load_s"):
                continue
            (prefill_s, prompt), (decode_s, generated) = run["prefill"], run["decode"]
            rates["prefill"].append(prompt * layout["prefill_ops_per_token"] / prefill_s)
            rates["decode"].append(generated * layout["decode_bytes_per_token"] / decode_s)
            rates["load"].append(layout["weight_bytes"] / float(row["load_s"]))
            timed = (int(float(row.get("warmup") or 0)) + 1) * (prefill_s + decode_s)
            rates["other"].append(max(0.0, float(row["wall_s"]) - float(row["load_s"]) - timed))
            seen.add(row["experiment"])
    if not rates["prefill"]:
        return None
    median = {k: statistics.median(v) for k, v in rates.items()}
    return DeviceSpeed(
        median["prefill"],
        median["decode"],
        median["load"],
        median["other"],
        len(rates["prefill"]),
        tuple(sorted(seen)),
    )


def invocation_s(speed: DeviceSpeed, layout: dict, bench: Bench) -> float:
    """One invocation of a model with this layout at `bench`'s prompt, decode and warm-ups."""
    prefill = bench.prompt_tokens * layout["prefill_ops_per_token"] / speed.prefill_ops_per_s
    decode = bench.generate_tokens * layout["decode_bytes_per_token"] / speed.decode_bytes_per_s
    load = layout["weight_bytes"] / speed.load_bytes_per_s
    return (bench.warmup + 1) * (prefill + decode) + load + speed.other_s


def estimated_invocation_s(plan, device: str, root: Path) -> tuple[float, str] | None:
    """The mean estimated seconds of one invocation over the run's variants and models on the
    device, and where the figures come from; None where a model's layout or the device's speed
    at a variant's thread count is not known yet."""
    # pulls jsonschema: an earlier run's table only
    from mnnrepro.config import run_variants

    config, seconds, sources = plan.config, [], set()
    for model in plan.models:
        layout = layout_of(model, root)
        if layout is None:
            return None
        for variant in run_variants(config).values():
            threads = variant["runtime"]["thread_num"]  # the schema fills it in
            speed = device_speed(device, threads, root, plan.experiment.results_key)
            if speed is None:
                return None
            seconds.append(invocation_s(speed, layout, plan.design.bench))
            sources.update(speed.experiments)
    mean = sum(seconds) / len(seconds)
    source = (
        f"{mean:.3g} s per invocation estimated from this model's layout and the device's "
        f"speed in {', '.join(sorted(sources))} (plan/invocation_time.py)"
    )
    return mean + config["bench"]["cooldown_s"], source


def push_s(plan, device: str, root: Path) -> float | None:
    """Seconds to push the run's models to the device: their bytes (each model's manifest)
    at the push rate of the device's earlier pushes (receipts' bytes_pushed over push_s, any
    experiment); None where either is not known yet."""
    total = 0
    for model in plan.models:
        manifest = root / "results" / "models" / model / "manifest.json"
        if not manifest.is_file():
            return None
        total += sum(f["size"] for f in json.loads(manifest.read_text())["files"])
    moved = seconds = 0.0
    for receipt in (root / "results").glob(f"*/pushed/{device}/*.json"):
        record = json.loads(receipt.read_text(encoding="utf-8"))
        if record.get("bytes_pushed") and record.get("push_s"):
            moved, seconds = moved + record["bytes_pushed"], seconds + record["push_s"]
    return total * seconds / moved if moved else None
