"""Run a benchmark schedule on a device, resumably.

Every finished invocation is written at once, atomically, to its own raw file
(`<raw_dir>/<variant>/rep-<block>.json`). Raw files are not Snakemake outputs, so they
survive a crash, a disconnect or Ctrl-C; a rerun keeps every raw file whose `plan_key`
matches (same engine, model, runtime and bench settings) and runs only what is missing.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from mnnrepro.device import Device
from mnnrepro.hashing import read_json, sha256_text, write_json
from mnnrepro.schedule import Invocation

log = logging.getLogger(__name__)
RUNNER = Path(__file__).with_name("prebuilt_runner.py")


class BenchError(RuntimeError):
    pass


def plan_key(spec: dict) -> str:
    """Identity of one variant's measurement: changes whenever what it measures changes."""
    return sha256_text(json.dumps(spec, sort_keys=True))


def raw_path(raw_dir: Path, inv: Invocation) -> Path:
    return Path(raw_dir) / inv.variant / f"rep-{inv.block:03d}.json"


def is_done(path: Path, key: str) -> bool:
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return False
    return record.get("plan_key") == key and record.get("status") == "ok"


def bench_argv(
    device: Device, runner: str, model_config: str, runtime: dict, bench: dict, out: str
) -> list[str]:
    return [
        device.python(),
        runner,
        "bench",
        "--config",
        model_config,
        "--runtime",
        json.dumps(runtime, sort_keys=True),
        "--out",
        out,
        "--prompt-tokens",
        str(bench["prompt_tokens"]),
        "--generate-tokens",
        str(bench["generate_tokens"]),
        "--warmup",
        str(bench["warmup"]),
    ]


def run_one(device: Device, argv: list[str], device_out: str, bench: dict) -> dict:
    """Run one invocation with retries; returns the runner's payload or raises BenchError."""
    attempts = bench["retries"] + 1
    failures = []
    for attempt in range(1, attempts + 1):
        result = device.run(argv, timeout=bench["timeout_s"])
        if result.ok:
            local = Path(device.scratch("fetched.json"))
            device.fetch(device_out, local)
            payload = json.loads(local.read_text(encoding="utf-8"))
            payload["attempts"] = attempt
            payload["wall_s"] = result.seconds
            return payload
        why = "timed out" if result.returncode is None else f"exit code {result.returncode}"
        failures.append(f"attempt {attempt}: {why}\n{result.stderr[-4000:]}")
        log.warning("invocation failed (%s), attempt %d of %d", why, attempt, attempts)
    raise BenchError(
        "benchmark invocation failed:\n$ " + " ".join(argv) + "\n" + "\n".join(failures)
    )


def run_schedule(
    device: Device,
    plan: list[Invocation],
    specs: dict[str, dict],
    model_dir: str,
    bench: dict,
    raw_dir: str | Path,
) -> list[dict]:
    """Run every invocation of plan not already done; returns the index of all raw files.

    specs: variant -> {"runtime": {...}, "engine": {...}, "model_manifest_sha256": ...}.
    """
    raw_dir = Path(raw_dir)
    runner = device.stage(RUNNER)
    model_config = str(Path(device.stage(model_dir)) / "config.json")
    device_out = device.scratch("invocation.json")
    index = []
    done = 0
    for inv in plan:
        spec = specs[inv.variant]
        key = plan_key(
            {
                "spec": spec,
                "bench": {k: bench[k] for k in ("prompt_tokens", "generate_tokens", "warmup")},
            }
        )
        path = raw_path(raw_dir, inv)
        if is_done(path, key):
            log.info("keep   %s (measured earlier)", path)
            done += 1
        else:
            if bench["cooldown_s"]:
                time.sleep(bench["cooldown_s"])
            thermal_before = device.thermal()
            started = time.time()
            argv = bench_argv(device, runner, model_config, spec["runtime"], bench, device_out)
            payload = run_one(device, argv, device_out, bench)
            record = {
                "status": "ok",
                "plan_key": key,
                "invocation": inv.to_dict(),
                "variant": inv.variant,
                "device": device.name,
                "started_unix": started,
                "thermal_before_c": thermal_before,
                "thermal_after_c": device.thermal(),
                "bench": {k: bench[k] for k in ("prompt_tokens", "generate_tokens", "warmup")},
                "spec": spec,
                **payload,
            }
            write_json(path, record)
            log.info(
                "ran    %s: %s",
                path,
                ", ".join(f"{r['phase']} {r['tps']:.2f} tok/s" for r in payload["results"]),
            )
        index.append({"invocation": inv.to_dict(), "raw": str(path)})
    log.info("%d invocations kept from earlier runs, %d run now", done, len(plan) - done)
    return index


def run_greedy(
    device: Device,
    model_dir: str,
    runtime: dict,
    prompts: list[str],
    max_new_tokens: int,
    timeout: float,
) -> dict:
    runner = device.stage(RUNNER)
    model_config = str(Path(device.stage(model_dir)) / "config.json")
    out = device.scratch("greedy.json")
    argv = [
        device.python(),
        runner,
        "greedy",
        "--config",
        model_config,
        "--runtime",
        json.dumps(runtime, sort_keys=True),
        "--out",
        out,
        "--prompts",
        json.dumps(prompts, ensure_ascii=False),
        "--max-new-tokens",
        str(max_new_tokens),
    ]
    result = device.run(argv, timeout=timeout)
    if not result.ok:
        raise BenchError("greedy run failed:\n$ " + " ".join(argv) + "\n" + result.stderr[-4000:])
    local = Path(device.scratch("greedy-fetched.json"))
    device.fetch(out, local)
    return json.loads(local.read_text(encoding="utf-8"))


def variant_specs(variants: dict, engines: dict[str, dict], manifest_sha256: str) -> dict:
    """What identifies each variant's measurement: engine (with file hashes), runtime, model."""
    return {
        name: {
            "engine": engines[variant["engine"]],
            "runtime": variant.get("runtime", {}),
            "model_manifest_sha256": manifest_sha256,
        }
        for name, variant in variants.items()
    }


def run_plan_for_rule(
    device_name: str,
    device_spec: dict,
    model_dir: str,
    manifest: str,
    engine_files: list[str],
    variants: dict,
    bench: dict,
    raw_dir: str,
) -> dict:
    from mnnrepro.device import make_device
    from mnnrepro.hashing import sha256_file
    from mnnrepro.schedule import interleaved

    engines = {e["engine"]: e for e in map(read_json, engine_files)}
    specs = variant_specs(variants, engines, sha256_file(manifest))
    plan = interleaved(sorted(variants), bench["repetitions"])
    device = make_device(device_name, device_spec)
    try:
        runs = run_schedule(device, plan, specs, model_dir, bench, raw_dir)
    finally:
        device.close()
    return {"device": device_name, "emulated": device.emulated, "runs": runs}
