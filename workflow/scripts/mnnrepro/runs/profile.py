"""What ran: one profile per variant and phase, after the timed repetitions.

Each phase is the engine's own benchmark with one phase left: `prefill` runs the benchmark's
prompt and generates 1 token, `decode` runs a 1-token prompt and the benchmark's generated
tokens (so each one's work is its phase's but for one token of the other). It runs under the
device kind's profiler (devices/profilers.py) and is never one of the timed repetitions: its
timings are not read.

A phase is profiled in a process of its own (the start-up, loading the model, counted in
each), except where the device counts a process's marked phases apart (QEMU: its strace log
orders the markers with the blocks; callgrind: it writes a part of its profile at each
marker; Device.marks_phases) and the engine has one process for them all
(EngineKind.phases_command: the Python runner's `phases` mode): there one process per
variant loads the model, runs every phase once unprofiled (the warm-up, as the timed
repetitions have), then each again between two markers, and a phase's profile is what ran
between its markers (`profiled_in`). A prediction subtracts the start-up phase either way
(analysis/token_work.py), so what a process does once cancels in both.

Every profile is written at once to its own file (`<out_dir>/<variant>/<phase>.json`) with the
key of what it profiled; a rerun keeps those whose key matches and profiles only what is
missing.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from mnnrepro.devices.profilers import ProfilerError
from mnnrepro.devices.qemu_blocks import OUTSIDE_PHASES
from mnnrepro.engines.device_io import command_record
from mnnrepro.engines.registry import engine_for
from mnnrepro.files import read_json, write_json
from mnnrepro.phases import PHASES, SHORT_PREFILL_PHASE, STARTUP_PHASE, VISION_PHASES, short_prompt
from mnnrepro.runs.job import DeviceJob
from mnnrepro.runs.on_device import on_device
from mnnrepro.runs.raw_files import measurement_key, variant_specs
from mnnrepro.runs.staging import check_receipt, engine_files, process_env
from mnnrepro.runs.vision import measured_vision, with_measured_vision, with_vision_set
from mnnrepro.sections import Bench

VISION = VISION_PHASES[0]  # the image questions' profiled invocation is named after the encoder

log = logging.getLogger(__name__)

# how a phase's profile was made (the profile's `profiled_in`; module docstring)
OWN_PROCESS = "a process of its own"
ONE_PROCESS = "one process per variant: loaded, warmed up, the phase between its markers"
# a profiled run is slower than a timed one (perf's sampling; QEMU runs twice, the second
# logging every block): it may take this many times `bench.timeout_s`
TIMEOUT_FACTOR = 4


def phase_bench(bench: Bench, phase: str) -> Bench:
    """The benchmark settings of a profiled invocation that runs one phase (`vision`: the
    image questions after a 1-token prompt and 1 generated token; the others: no images)."""
    if phase == VISION:
        return replace(bench, prompt_tokens=1, generate_tokens=1, warmup=0)
    if phase == STARTUP_PHASE:
        return replace(bench, prompt_tokens=1, generate_tokens=1, warmup=0, vision_set=None)
    if phase == "prefill":
        return replace(bench, generate_tokens=1, warmup=0, vision_set=None)
    if phase == SHORT_PREFILL_PHASE:
        short = short_prompt(bench.prompt_tokens)
        return replace(bench, prompt_tokens=short, generate_tokens=1, warmup=0, vision_set=None)
    return replace(bench, prompt_tokens=1, warmup=0, vision_set=None)


def profiled_phases(bench: Bench, engine_record: dict, predicted: tuple) -> tuple[str, ...]:
    """Prefill and decode; the image questions, for an engine that asks them; and where a
    prediction counts, its own (predicted: phases.PREDICTION_PHASES, the start-up both phases
    share and a short prefill)."""
    vision = (VISION,) if measured_vision(bench, engine_record) else ()
    return PHASES + vision + tuple(predicted)


def profile_for_rule(job: DeviceJob, attribution: dict, out_dir: str) -> dict:
    """Profile every variant in every phase on the job's device (resumable); the index of
    files."""
    engines, built_dirs, variants = job.engines(), job.built_dirs(), job.variants
    staged = read_json(job.receipt)
    specs = variant_specs(variants, engines, job.manifest_sha256(), staged)

    def profile(device, bench, variant: str, phase: str) -> dict:
        spec = specs[variant]
        return profile_one(
            device,
            variant,
            phase,
            spec,
            staged,
            phase_bench(bench, phase),
            attribution,
            Path(out_dir) / variant / f"{phase}.json",
            built_dirs[spec["engine"].name],
        )

    with on_device(job.device_name, job.device_spec, "the kernel profile") as device:
        check_receipt(device, staged)
        bench = with_vision_set(device, job.bench, job.images, job.tools())
        # the start-up and a short prefill, on the device a prediction counts
        counted = job.device_name in attribution.get("startup_devices", [])
        predicted = attribution.get("prediction_phases", []) if counted else []
        index = []
        for v in sorted(variants):
            phases = profiled_phases(bench, specs[v]["engine"], predicted)
            spec, out = specs[v], Path(out_dir) / v
            built_dir = built_dirs[spec["engine"].name]
            # in one process where the device and the engine have one
            marked = device.marks_phases and profile_marked(
                device, v, phases, spec, staged, bench, attribution, out, built_dir
            )
            index += marked or [profile(device, bench, v, p) for p in phases]
    return {"device": job.device_name, "emulated": device.emulated, "profiles": index}


def profile_one(device, variant, phase, spec, receipt, bench, attribution, path, built_dir):
    """One profiled invocation of variant in phase (bench: that phase's settings), written to
    path; kept when path holds a profile of the same measurement."""
    record = spec["engine"]
    kind = record.kind
    key = profile_key(device, spec, bench, attribution)
    entry = {"variant": variant, "phase": phase, "path": str(path)}
    if path.is_file() and read_json(path).get("profile_key") == key:
        log.info("keep   %s (profiled earlier)", path)
        return entry
    device.verify(engine_files(record, receipt))
    argv, env = profiled_command(device, spec, receipt, bench)
    libraries = kind.profiled_libraries(record, built_dir, device)
    print(f"{device.name}: profiling {variant} ({phase})", flush=True)
    result, profile = device.profile(
        argv, bench.timeout_s * TIMEOUT_FACTOR, env, libraries, attribution["sample_hz"]
    )
    check_ran(device, result, f"{variant}, {phase}")
    write_json(
        path,
        {
            "profile_key": key,
            **profile_fields(device, variant, phase, record, bench, libraries),
            **ran_fields(argv, env, result),
            "profiled_in": OWN_PROCESS,
            **profile,
        },
    )
    return entry


def profile_marked(device, variant, phases, spec, receipt, bench, attribution, out, built_dir):
    """The variant's phases profiled in one process that marks each (module docstring),
    written to out/<phase>.json (the index's entries); kept where every one holds a profile
    of the same measurement; None where the engine has no such process."""
    record, kind = spec["engine"], spec["engine"].kind
    phases = sorted(phases, key=lambda p: p == VISION)  # in the runner's order: images last
    benches = {p: phase_bench(bench, p) for p in phases}
    engine = engine_for(record, receipt)
    marker = device.scratch("phase-markers")  # a folder never made: each marker's stat fails
    command = marked_command(device, engine, receipt, spec, benches, bench, marker)
    if command is None:
        return None
    keys = {p: profile_key(device, spec, benches[p], attribution, ONE_PROCESS) for p in phases}
    paths = {p: out / f"{p}.json" for p in phases}
    entries = [{"variant": variant, "phase": p, "path": str(paths[p])} for p in phases]
    if all(
        path.is_file() and read_json(path).get("profile_key") == keys[p]
        for p, path in paths.items()
    ):
        log.info("keep   %s (profiled earlier)", out)
        return entries
    device.verify(engine_files(record, receipt))
    argv, env = command[0], process_env(spec, command[1], receipt)
    libraries = kind.profiled_libraries(record, built_dir, device)
    print(f"{device.name}: profiling {variant} ({', '.join(phases)}: one process)", flush=True)
    timeout = bench.timeout_s * TIMEOUT_FACTOR * 2  # every phase twice: warmed up, profiled
    result, segments = device.profile_phases(
        argv, timeout, env, libraries, attribution["sample_hz"], marker, phases
    )
    missing = [p for p in phases if p not in segments]
    if result.ok and missing:
        raise ProfilerError(
            f"the profiled process on {device.name} ({variant}) marked no {', '.join(missing)}"
            f":\n$ {result.command_line}"
        )
    check_ran(device, result, variant)
    outside = segments.get(OUTSIDE_PHASES, {}).get("total")
    for p in phases:  # an emulated crash: the phases before it, and what the crash's counted
        write_json(
            paths[p],
            {
                "profile_key": keys[p],
                **profile_fields(device, variant, p, record, benches[p], libraries),
                **ran_fields(argv, env, result),
                "profiled_in": ONE_PROCESS,
                "outside_phases_total": outside,
                **segments.get(p, {}),
            },
        )
    return entries


def marked_command(device, engine, receipt, spec, benches: dict, bench: Bench, marker: str):
    """The engine's one process that runs and marks each phase of `benches` (in its order),
    or None where the engine has none."""
    asked = [
        [p, b.prompt_tokens, b.generate_tokens, *image_questions(p, bench)]
        for p, b in benches.items()
    ]
    model, out = engine.model_path(receipt), device.scratch("profile.json")
    return engine.phases_command(device, model, spec["runtime"], asked, marker, out)


def image_questions(phase: str, bench: Bench) -> list[dict]:
    """What the runner's phases mode asks in the image questions' phase (none in the others)."""
    vision = bench.vision_set if phase == VISION else None
    if not vision:
        return []
    return [{"images": [i["device_path"] for i in vision["images"]], "text": vision["text"]}]


def check_ran(device, result, what: str) -> None:
    """A profiled process that failed on a real device stops the job; on an emulated one its
    crash is what the profile found."""
    if not result.ok and not device.emulated:
        raise ProfilerError(
            f"profiled invocation failed on {device.name} ({what}):\n$ "
            f"{result.command_line}\n{result.stderr[-2000:]}"
        )


def ran_fields(argv: list, env: dict, result) -> dict:
    """What every profile's file says of the process that made it."""
    return {
        "command": command_record(argv, env, result),
        "wall_s": round(result.seconds, 3),
        "returncode": result.returncode,
        "stderr_tail": "" if result.ok else result.stderr[-2000:],
    }


def profile_fields(device, variant, phase, record, bench, libraries) -> dict:
    """What every profile's file says of what it profiled."""
    return {
        "device": device.name,
        "variant": variant,
        "phase": phase,
        "engine": record.name,
        "prompt_tokens": bench.prompt_tokens,
        "generate_tokens": bench.generate_tokens,
        "libraries": sorted(libraries),
        "sme2_kernels": record.kind.sme2_kernel_names(record),
    }


def profile_key(device, spec: dict, bench: Bench, attribution: dict, profiled_in: str = "") -> str:
    """The key of what a profile measured: the variant's engine and settings, the phase's
    token counts, the sampling rate and profiler, how the process ran it (profiled_in:
    "" = a process of its own) and the images by content."""
    measured = {
        "prompt_tokens": bench.prompt_tokens,
        "generate_tokens": bench.generate_tokens,
        "sample_hz": attribution["sample_hz"],
        "profiler": device.kind,
        **({"profile_counts": device.profile_counts} if device.profile_counts else {}),
        **({"profiled_in": profiled_in} if profiled_in else {}),
    }
    return measurement_key(spec, with_measured_vision(measured, bench, spec["engine"]))


def profiled_command(device, spec: dict, receipt: dict, bench: Bench) -> tuple[list, dict]:
    """The engine's benchmark command for the phase (bench), or for the image questions
    (only phase_bench's vision phase has them) the engine's own vision command where its
    benchmark tool takes no images; the variant's env under the engine's."""
    engine = engine_for(spec["engine"], receipt)
    out = device.scratch("profile.json")
    command = engine.vision_command(device, receipt, spec["runtime"], bench, out)
    argv, env = command or engine.bench_command(
        device, engine.model_path(receipt), spec["runtime"], bench, out
    )
    return argv, process_env(spec, env, receipt)
