"""Run a benchmark schedule on a device, resumably.

Every finished invocation is written at once, atomically, to its own raw file
(`<raw_dir>/<variant>/rep-<block>.json`). Raw files are not Snakemake outputs, so they
survive a crash, a disconnect or Ctrl-C; a rerun keeps every raw file whose `plan_key`
matches `measurement_key` (the engine's identity, model, runtime, env and bench settings) and
runs only what is missing."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from mnnrepro.design import Design
from mnnrepro.devices.base import Device
from mnnrepro.devices.power import PowerReader
from mnnrepro.engines.device_io import BenchError, command_record
from mnnrepro.engines.pairs import Pair, PairModes
from mnnrepro.engines.registry import engine_for
from mnnrepro.engines.runner.vision_entries import vision_results
from mnnrepro.files import read_json, write_json
from mnnrepro.intervals import experiment_intervals
from mnnrepro.phases import VISION_PHASES
from mnnrepro.runs.gates import quiet_gate, thermal_gate
from mnnrepro.runs.job import DeviceJob
from mnnrepro.runs.on_device import on_device, surviving
from mnnrepro.runs.power import PowerSampler, unavailable
from mnnrepro.runs.precision import stopping_decision, verdict_thresholds
from mnnrepro.runs.raw_files import (
    done_record,
    index_entry,
    measurement_key,
    raw_path,
    supersede,
    variant_specs,
)
from mnnrepro.runs.schedule import Invocation, interleaved
from mnnrepro.runs.staging import check_receipt, engine_files, process_env
from mnnrepro.runs.vision import with_measured_vision, with_vision_set
from mnnrepro.sections import Bench

log = logging.getLogger(__name__)

# what a record keeps of the thermal gate's decision (its temperatures are thermal_before_c)
THERMAL_GATE_KEPT = ("waited_s", "cool", "thermal_status", "gated_on", "hottest_gated_c")
THERMAL_GATE_KEPT += ("ignored", "rule")


def run_one(
    device: Device, engine, argv: list[str], env: dict, out: str, bench: Bench, read=None
) -> dict:
    """Run one invocation with retries; returns the engine's reading (read: the engine's
    read_bench unless given) or raises BenchError."""
    attempts = bench.retries + 1
    failures = []
    for attempt in range(1, attempts + 1):
        result = device.run_invocation(argv, timeout=bench.timeout_s, env=env)
        if result.ok:
            payload = (read or engine.read_bench)(device, result, out)
            payload["attempts"] = attempt
            payload["wall_s"] = result.seconds
            payload["other_load"] = result.other_load
            payload["command"] = command_record(argv, env, result)
            return payload
        why = "timed out" if result.returncode is None else f"exit code {result.returncode}"
        failures.append(f"attempt {attempt}: {why}\n{result.stderr[-4000:]}")
        log.warning("invocation failed (%s), attempt %d of %d", why, attempt, attempts)
    raise BenchError(
        f"device {device.name}: the benchmark's invocation failed {attempts} times "
        f"(`bench.retries` {bench.retries}); the repetitions done are kept, a rerun measures "
        "the rest\n$ " + (result.command_line or " ".join(argv)) + "\n" + "\n".join(failures)
    )


def vision_step(device: Device, engine, receipt, runtime, env, bench, power_reader) -> dict | None:
    """The vision phase as its own command after the text benchmark (EngineKind.vision_command:
    an engine whose benchmark tool takes no images), sampled on its own: its results, the
    tool's output, its power samples and the questions' window on the device's clock."""
    out = device.scratch("vision.json")
    command = engine.vision_command(device, receipt, runtime, bench, out)
    if command is None:
        return None
    argv, own = command
    with sampling(power_reader, bench) as sampler:
        tool = run_one(device, engine, argv, {**env, **own}, out, bench, read=engine.read_vision)
    return {
        "results": vision_results(tool),
        "tool": tool,
        "power": sampler.record() if sampler else unavailable(power_reader),
        # the questions' three phases alternate image by image: each one's window is their span
        "phase_clock": {"clock": "CLOCK_BOOTTIME", **{p: tool["window"] for p in VISION_PHASES}},
    }


def with_vision_step(results: list[dict], step: dict | None) -> dict:
    """A bench payload's fields with the vision step's: its entries after the text phases, the
    rest under `vision_step` (analysis/tables.py integrates its energy over its own samples)."""
    if step is None:
        return {}
    rest = {k: v for k, v in step.items() if k != "results"}
    return {"results": results + step["results"], "vision_step": rest}


@contextmanager
def sampling(reader, bench: Bench):
    """Sample power while the invocation runs (None where the device has no reader)."""
    if not isinstance(reader, PowerReader):
        yield None
        return
    with PowerSampler(reader, bench.power_sample_s) as sampler:
        yield sampler


@dataclass(frozen=True)
class Measuring:
    """What every invocation of one schedule on one device shares: the device, what was pushed
    to it (its receipt), the bench settings the job measures under (`measured`: those a raw
    record's key holds), the device's output file, its power reader, and the label of a
    re-measurement (`--config remeasure`; "" for none)."""

    device: Device
    receipt: dict
    bench: Bench
    measured: dict
    out: str
    power_reader: object
    remeasure: str = ""


def run_engine(run: Measuring, spec: dict, clock: list[float]) -> dict:
    """The engine's run (power sampled) and the vision step: the record's payload. clock gets
    a mark when the engine starts and when it ends. On an emulated device a failed run is kept
    as `failed` (emulated timings are never compared); on a real one it stops the job."""
    device, receipt, bench, power_reader = run.device, run.receipt, run.bench, run.power_reader
    engine = engine_for(spec["engine"], receipt)
    argv, env = engine.bench_command(
        device, engine.model_path(receipt), spec["runtime"], bench, run.out
    )
    env = process_env(spec, env, receipt)  # the variant's env; the engine's own wins
    clock.append(time.monotonic())
    sampler = None
    try:
        with sampling(power_reader, bench) as sampler:
            payload = run_one(device, engine, argv, env, run.out, bench)
        payload["power"] = sampler.record() if sampler else unavailable(power_reader)
        clock.append(time.monotonic())
        step = vision_step(device, engine, receipt, spec["runtime"], env, bench, power_reader)
        payload.update(with_vision_step(payload["results"], step))
    except BenchError as err:
        if not device.emulated:
            raise
        payload = {"status": "failed", "error": str(err)[-2000:], "results": []}
        payload["power"] = sampler.record() if sampler else unavailable(power_reader)
    return payload


def measure(run: Measuring, inv: Invocation, spec: dict, key: str, path: Path) -> dict:
    """One invocation, measured now: gates first, then the engine (with power sampled) and the
    vision step; its record (raw key `key`, written to `path`), with where its device time
    went."""
    device, bench, remeasure = run.device, run.bench, run.remeasure
    clock = [time.monotonic()]  # where the device's time goes, step by step
    if bench.cooldown_s:
        time.sleep(bench.cooldown_s)
    clock.append(time.monotonic())
    gate = thermal_gate(device, bench)
    clock.append(time.monotonic())
    quiet = quiet_gate(device, bench)
    clock.append(time.monotonic())
    screen = device.screen_state()
    device.verify(engine_files(spec["engine"], run.receipt))
    cpufreq_before = device.cpufreq()
    started = time.time()
    payload = run_engine(run, spec, clock)
    record = {
        "status": "ok",
        "emulated": device.emulated,
        # a phone on USB power: its battery current is the charger's balance
        "battery_after": device.battery(),
        "build_fingerprint": device.build_fingerprint(),
        "screen_before": screen,
        "plan_key": key,
        "invocation": inv.to_dict(),
        "variant": inv.variant,
        "device": device.name,
        "started_unix": started,
        "thermal_before_c": gate["temps_c"],
        "thermal_gate": {k: gate[k] for k in THERMAL_GATE_KEPT},
        "thermal_after_c": device.thermal(),
        "quiet_gate": quiet,
        "cpufreq_before": cpufreq_before,
        "cpufreq_after": device.cpufreq(),
        "bench": run.measured,
        "spec": spec,
        **payload,
    }
    record["device_time_s"] = device_time(clock, time.monotonic())
    if remeasure:
        record["remeasure"] = remeasure
    if path.exists():  # measured again: the earlier file is set aside, never lost
        record["supersedes"] = supersede(path, key, remeasure)
    return record


def surviving_invocation(device: Device, inv: Invocation, measure_now) -> dict:
    """measure_now()'s record; a phone lost meanwhile is waited for and the invocation measured
    again, each loss counted in its `attempts` (bench.csv) and listed in `device_lost`."""
    losses = []
    stage = f"the benchmark ({inv.variant} rep {inv.block})"
    record = surviving(device, stage, measure_now, losses)
    if losses:
        record["attempts"] += len(losses)
        record["device_lost"] = losses
    return record


def run_schedule(
    device: Device,
    plan: list[Invocation],
    specs: dict[str, dict],
    receipt: dict,
    bench: Bench,
    raw_dir: str | Path,
    stop=None,
    remeasure: str = "",
) -> tuple[list[dict], dict | None]:
    """Run the invocations of plan not already done, block by block; returns the index of all
    raw files and why it stopped.

    specs: variant -> {"runtime": {...}, "engine": {...}, "model_manifest_sha256": ...}.
    receipt: what push_receipt staged on this device (verified here, never re-pushed).
    stop: called with (records so far, complete blocks) after each block; a dict ends the run
    there (precision on demand), None goes on. Without it the whole plan runs.
    """
    raw_dir = Path(raw_dir)
    check_receipt(device, receipt)
    measured = {k: getattr(bench, k) for k in ("prompt_tokens", "generate_tokens", "warmup")}
    power_reader = device.power_reader() if bench.power_sample_s else "not asked for"
    out = device.scratch("invocation.json")
    run = Measuring(device, receipt, bench, measured, out, power_reader, remeasure)
    index, records, stopped = [], [], None
    done = 0
    per_block = len({inv.variant for inv in plan})
    for number, inv in enumerate(plan, 1):
        progress = f"{device.name}: [{number}/{len(plan)}] {inv.variant} rep {inv.block}"
        record, kept = kept_or_measured(run, inv, specs[inv.variant], raw_dir, progress)
        done += kept
        records.append(record)
        index.append(index_entry(inv, raw_path(raw_dir, inv)))
        if stop is not None and inv.position == per_block - 1:
            stopped = stop(records, inv.block + 1)
            if stopped is not None:
                log.info("stopping after %d blocks: %s", inv.block + 1, stopped["reason"])
                print(f"{device.name}: stopped after {inv.block + 1} blocks: {stopped['reason']}")
                break
    log.info("%d invocations kept from earlier runs, %d run now", done, len(index) - done)
    return index, stopped


def kept_or_measured(run: Measuring, inv, spec: dict, raw_dir: Path, progress: str):
    """(one invocation's raw record, whether it was kept): the one measured earlier under the
    same key where it exists (and --config remeasure does not ask for it again), else measured
    now and written before the next one runs."""
    key = measurement_key(spec, with_measured_vision(run.measured, run.bench, spec["engine"]))
    path = raw_path(raw_dir, inv)
    record = done_record(path, key, run.remeasure)
    if record is not None:
        log.info("keep   %s (measured earlier)", path)
        print(f"{progress}: kept (measured earlier)", flush=True)
        return record, True
    record = surviving_invocation(run.device, inv, partial(measure, run, inv, spec, key, path))
    write_json(path, record)
    print(f"{progress}: measured", flush=True)
    speeds = ", ".join(f"{r['phase']} {r['tps']:.2f} tok/s" for r in record["results"])
    log.info("ran    %s: %s", path, speeds)
    return record, False


STEPS = ("cooldown", "thermal_gate", "quiet_gate", "setup", "engine", "vision_and_teardown")


def device_time(clock: list[float], end: float) -> dict:
    """Where one invocation's device time went, in seconds: the cool-down, the thermal and
    quiet gates, the setup (screen, file check, frequencies), the engine's run (its load and
    phases are in the record's own timings), then the vision step and what follows it; and
    the total (what a run's device-time budget counts)."""
    marks = [*clock, end][: len(STEPS) + 1]
    marks += [end] * (len(STEPS) + 1 - len(marks))  # an engine failure skips the vision step
    steps = {s: round(b - a, 3) for s, a, b in zip(STEPS, marks, marks[1:], strict=False)}
    return {**steps, "total": round(end - clock[0], 3)}


def run_plan_for_rule(
    job: DeviceJob, raw_dir: str, design: Design, modes: PairModes, remeasure: str = ""
) -> dict:
    """The job's benchmark, resumable, in its interleaved schedule, its blocks chosen by its
    stopping rule (precision.stopping_decision): the judged pairs of the design at its level,
    and for a run that stops on its verdict the rows' thresholds by the pairs' modes on this
    device (engines.pairs.modes_of; precision.verdict_thresholds)."""
    engines, bench, variants = job.engines(), job.bench, job.variants
    receipt = read_json(job.receipt)
    specs = variant_specs(variants, engines, job.manifest_sha256(), receipt)
    repetitions = bench.blocks  # the point's (a sweep's own)
    plan = interleaved(sorted(variants), repetitions.max)
    pairs = [pair.names for pair in Pair.judged(design)]
    chosen = experiment_intervals(design, repetitions)
    rows = verdict_thresholds(design, modes) if repetitions.stops_on_verdict else None

    def stop(records, blocks):
        cooldown = bench.cooldown_s
        return stopping_decision(records, blocks, repetitions, pairs, chosen, rows, cooldown)

    with on_device(job.device_name, job.device_spec, "the benchmark") as device:
        asked = with_vision_set(device, bench, job.images, job.tools())
        runs, stopping = run_schedule(device, plan, specs, receipt, asked, raw_dir, stop, remeasure)
    return {
        "device": job.device_name,
        "emulated": device.emulated,
        "runs": runs,
        "stopping": stopping,
    }
