"""What ran: one profiled invocation per variant and phase, after the timed repetitions.

Each is the engine's own benchmark command with one phase left: `prefill` runs the benchmark's
prompt and generates 1 token, `decode` runs a 1-token prompt and the benchmark's generated
tokens (so each invocation's work is its phase's but for one token of the other). It runs
under the device kind's profiler (devices/profilers.py) and is never one of the timed
repetitions: its timings are not read. Every profile is written at once to its own file
(`<out_dir>/<variant>/<phase>.json`) with the key of what it profiled; a rerun keeps those
whose key matches and profiles only what is missing.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mnnrepro.devices.profilers import ProfilerError
from mnnrepro.engines.base import command_record
from mnnrepro.engines.registry import engine_for
from mnnrepro.files import read_json, write_json
from mnnrepro.runs.benchmark import variant_specs
from mnnrepro.runs.job import DeviceJob
from mnnrepro.runs.on_device import on_device
from mnnrepro.runs.raw_files import measurement_key
from mnnrepro.runs.staging import check_receipt, engine_files
from mnnrepro.runs.vision import measured_vision, with_measured_vision, with_vision_set
from mnnrepro.stats import (
    PHASES,
    SHORT_PREFILL_PHASE,
    STARTUP_PHASE,
    VISION_PHASES,
    short_prompt,
)

VISION = VISION_PHASES[0]  # the image questions' profiled invocation is named after the encoder

log = logging.getLogger(__name__)

# a profiled run is slower than a timed one (perf's sampling; QEMU runs twice, the second
# logging every block): it may take this many times `bench.timeout_s`
TIMEOUT_FACTOR = 4


def phase_bench(bench: dict, phase: str) -> dict:
    """The benchmark settings of a profiled invocation that runs one phase (`vision`: the
    image questions after a 1-token prompt and 1 generated token; the others: no images)."""
    if phase == VISION:
        return {**bench, "prompt_tokens": 1, "generate_tokens": 1, "warmup": 0}
    if phase == STARTUP_PHASE:
        return {**bench, "prompt_tokens": 1, "generate_tokens": 1, "warmup": 0, "vision_set": None}
    if phase == "prefill":
        return {**bench, "generate_tokens": 1, "warmup": 0, "vision_set": None}
    if phase == SHORT_PREFILL_PHASE:
        short = short_prompt(bench["prompt_tokens"])
        return {**bench, "prompt_tokens": short, "generate_tokens": 1, "warmup": 0,
                "vision_set": None}  # fmt: skip
    return {**bench, "prompt_tokens": 1, "warmup": 0, "vision_set": None}


def profiled_phases(bench: dict, engine_record: dict, predicted: tuple) -> tuple[str, ...]:
    """Prefill and decode; the image questions, for an engine that asks them; and where a
    prediction counts, its own (predicted: stats.PREDICTION_PHASES, the start-up both phases
    share and a short prefill)."""
    vision = (VISION,) if measured_vision(bench, engine_record) else ()
    return PHASES + vision + tuple(predicted)


def profile_for_rule(job: DeviceJob, attribution: dict, out_dir: str) -> dict:
    """Profile every variant in every phase on the job's device (resumable); the index of
    files."""
    engines, built_dirs, variants = job.engines(), job.built_dirs(), job.variants
    specs = variant_specs(variants, engines, job.manifest_sha256())
    staged = read_json(job.receipt)

    def profile(device, bench, variant: str, phase: str) -> dict:
        spec = specs[variant]
        return profile_one(
            device, variant, phase, spec, staged, phase_bench(bench, phase), attribution,
            Path(out_dir) / variant / f"{phase}.json", built_dirs[spec["engine"]["engine"]],
        )  # fmt: skip

    with on_device(job.device_name, job.device_spec, "the kernel profile") as device:
        check_receipt(device, staged)
        bench = with_vision_set(device, job.bench, job.images, job.tools())
        # the start-up and a short prefill, on the device a prediction counts
        counted = job.device_name in attribution.get("startup_devices", [])
        predicted = attribution.get("prediction_phases", []) if counted else []
        index = [
            profile(device, bench, v, p)
            for v in sorted(variants)
            for p in profiled_phases(bench, specs[v]["engine"], predicted)
        ]
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
        argv, bench["timeout_s"] * TIMEOUT_FACTOR, env, libraries, attribution["sample_hz"]
    )
    if not result.ok and not device.emulated:  # an emulated crash is what the profile found
        raise ProfilerError(
            f"profiled invocation failed on {device.name} ({variant}, {phase}):\n$ "
            f"{result.command_line}\n{result.stderr[-2000:]}"
        )
    write_json(
        path,
        {
            "profile_key": key,
            "device": device.name,
            "variant": variant,
            "phase": phase,
            "engine": record["engine"],
            "prompt_tokens": bench["prompt_tokens"],
            "generate_tokens": bench["generate_tokens"],
            "libraries": sorted(libraries),
            "sme2_kernels": kind.sme2_kernel_names(record),
            "command": command_record(argv, env, result),
            "wall_s": round(result.seconds, 3),
            "returncode": result.returncode,
            "stderr_tail": "" if result.ok else result.stderr[-2000:],
            **profile,
        },
    )
    return entry


def profile_key(device, spec: dict, bench: dict, attribution: dict) -> str:
    """The key of what a profile measured: the variant's engine and settings, the phase's
    token counts, the sampling rate and profiler, and the images by content."""
    measured = {
        **{k: bench[k] for k in ("prompt_tokens", "generate_tokens")},
        "sample_hz": attribution["sample_hz"],
        "profiler": device.kind,
        **({"profile_counts": device.profile_counts} if device.profile_counts else {}),
    }
    return measurement_key(spec, with_measured_vision(measured, bench, spec["engine"]))


def profiled_command(device, spec: dict, receipt: dict, bench: dict) -> tuple[list, dict]:
    """The engine's benchmark command for the phase (bench), or for the image questions
    (only phase_bench's vision phase has them) the engine's own vision command where its
    benchmark tool takes no images; the variant's env under the engine's."""
    engine = engine_for(spec["engine"], receipt)
    out = device.scratch("profile.json")
    command = engine.vision_command(device, receipt, spec["runtime"], bench, out)
    argv, env = command or engine.bench_command(
        device, engine.model_path(receipt), spec["runtime"], bench, out
    )
    return argv, {**spec.get("env", {}), **env}
