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

from mnnrepro.engines.base import command_record
from mnnrepro.engines.registry import engine_for, kind_of_record
from mnnrepro.files import read_json, sha256_text, write_json
from mnnrepro.runs.benchmark import variant_specs
from mnnrepro.runs.device_lock import holding
from mnnrepro.runs.staging import check_receipt, engine_files

log = logging.getLogger(__name__)

PHASES = ("prefill", "decode")


def phase_bench(bench: dict, phase: str) -> dict:
    """The benchmark settings of a profiled invocation that runs one phase."""
    if phase == "prefill":
        return {**bench, "generate_tokens": 1, "warmup": 0}
    return {**bench, "prompt_tokens": 1, "warmup": 0}


def profile_key(spec: dict, bench: dict, attribution: dict, profiler: str) -> str:
    what = {
        "spec": spec,
        "bench": {k: bench[k] for k in ("prompt_tokens", "generate_tokens")},
        "sample_hz": attribution["sample_hz"],
        "profiler": profiler,
    }
    return sha256_text(repr(sorted(what.items())))


def profile_for_rule(
    device_name: str,
    device_spec: dict,
    receipt: str,
    manifest: str,
    engine_records: list[str],
    variants: dict,
    bench: dict,
    attribution: dict,
    out_dir: str,
) -> dict:
    """Profile every variant in every phase on one device (resumable); the index of files."""
    from mnnrepro.devices.factory import make_device
    from mnnrepro.files import sha256_file

    engines, built_dirs = {}, {}
    for path in engine_records:
        record = read_json(path)
        engines[record["engine"]] = record
        built_dirs[record["engine"]] = str(Path(path).parent / "bin")
    specs = variant_specs(variants, engines, sha256_file(manifest))
    staged = read_json(receipt)
    device = make_device(device_name, device_spec)
    index = []
    try:
        with holding(device.lock_key, device.name):
            check_receipt(device, staged)
            for variant in sorted(variants):
                for phase in PHASES:
                    index.append(
                        profile_one(
                            device, variant, phase, specs[variant], staged, bench,
                            attribution, Path(out_dir), built_dirs,
                        )
                    )  # fmt: skip
    finally:
        device.close()
    return {"device": device_name, "emulated": device.emulated, "profiles": index}


def profile_one(device, variant, phase, spec, receipt, bench, attribution, out_dir, built_dirs):
    record = spec["engine"]
    kind = kind_of_record(record)
    bench_phase = phase_bench(bench, phase)
    key = profile_key(spec, bench_phase, attribution, device.kind)
    path = out_dir / variant / f"{phase}.json"
    if path.is_file() and read_json(path).get("profile_key") == key:
        log.info("keep   %s (profiled earlier)", path)
        return {"variant": variant, "phase": phase, "path": str(path)}
    device.verify(engine_files(record, receipt))
    engine = engine_for(record, receipt)
    out = device.scratch("profile.json")
    argv, env = engine.bench_command(
        device, engine.model_path(receipt), spec["runtime"], bench_phase, out
    )
    env = {**spec.get("env", {}), **env}
    libraries = kind.profiled_libraries(record, built_dirs.get(record["engine"], ""), device)
    print(f"{device.name}: profiling {variant} ({phase})", flush=True)
    result, profile = device.profile(
        argv, bench["timeout_s"] * 4, env, libraries, attribution["sample_hz"]
    )
    document = {
        "profile_key": key,
        "device": device.name,
        "variant": variant,
        "phase": phase,
        "engine": record["engine"],
        "prompt_tokens": bench_phase["prompt_tokens"],
        "generate_tokens": bench_phase["generate_tokens"],
        "libraries": sorted(libraries),
        "sme2_kernels": kind.sme2_kernel_names(record),
        "command": command_record(argv, env, result),
        "wall_s": round(result.seconds, 3),
        "returncode": result.returncode,
        "stderr_tail": "" if result.ok else result.stderr[-2000:],
        **profile,
    }
    if not result.ok and not device.emulated:
        from mnnrepro.devices.profilers import ProfilerError

        raise ProfilerError(
            f"profiled invocation failed on {device.name} ({variant}, {phase}):\n$ "
            f"{result.command_line}\n{result.stderr[-2000:]}"
        )
    write_json(path, document)
    return {"variant": variant, "phase": phase, "path": str(path)}
