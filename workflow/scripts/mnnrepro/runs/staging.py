"""Staging on a device, by hash: the Python runner, built engines with their gate tools, the
model; and the receipt every run verifies before it runs anything.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from mnnrepro.devices.base import Device
from mnnrepro.engines.registry import RUNNER, RUNNER_MODULES, EngineRecord
from mnnrepro.files import sha256_file
from mnnrepro.models.formats import FORMATS
from mnnrepro.toolchain.tools import MASK_LIBRARY

log = logging.getLogger(__name__)


def push_receipt(
    device: Device,
    model_dirs: dict[str, str],
    model: str,
    engine_dirs: dict[str, str] | None = None,
    tool_dirs: dict[str, str] | None = None,
    mask_dir: str | None = None,
) -> dict:
    """Stage the runner, built engines (each with its gate tool), the SME mask where a variant
    hides SME (mask_dir: its build for the device's platform) and the model in every format
    the engines read (format -> its directory), and say where each one is and what moved: a
    second push of unchanged files is 0 B. A built engine is staged under its key
    (results/engines/<key>/bin), so two definitions of one engine name never share a device
    directory."""

    def staged(dirs: dict[str, str] | None, suffix: str) -> dict[str, str]:
        return {
            name: stage_engine(device, path, suffix) for name, path in sorted((dirs or {}).items())
        }

    started = time.monotonic()
    where = {
        **stage_runner(device),
        "engines": staged(engine_dirs, ""),
        "gate_tools": staged(tool_dirs, "-gate-tool"),
        **stage_mask(device, mask_dir),
        **stage_models(device, model_dirs, model),
    }
    log.info(
        "pushed %d bytes to %s, %d files already there",
        device.bytes_pushed,
        device.name,
        device.files_skipped,
    )
    return {
        "device": device.name,
        "kind": device.kind,
        "model": model,
        **where,
        "bytes_pushed": device.bytes_pushed,
        "push_s": round(time.monotonic() - started, 3),  # the dry run's push rate
        "files_skipped": device.files_skipped,
        "files": device.receipts,
    }


def stage_runner(device: Device) -> dict:
    """The Python runner, and beside it the modules it imports: Python looks for them in the
    runner's own folder."""
    folder = "engines/prebuilt-runner"
    return {
        "runner": device.stage(RUNNER, folder),
        "runner_modules": {name: device.stage(p, folder) for name, p in RUNNER_MODULES.items()},
    }


def stage_mask(device: Device, mask_dir: str | None) -> dict:
    """The SME mask (toolchain/sme_mask), where a variant hides SME: where its library is on the
    device and its sha256, which the measurements of the variants that preload it carry."""
    if mask_dir is None:
        return {}
    folder = device.stage(mask_dir, "tools/sme-mask")
    library = Path(mask_dir, MASK_LIBRARY)
    return {"sme_mask": {"device_path": f"{folder}/{MASK_LIBRARY}", "sha256": sha256_file(library)}}


def process_env(spec: dict, own: dict, receipt: dict) -> dict:
    """The environment of one variant's process: the variant's env (spec: its variant_specs
    entry, or its config) under the engine's own (own), with the SME mask preloaded where the
    variant hides SME (LD_PRELOAD, a name the config's env may not set)."""
    env = {**spec.get("env", {}), **own}
    if not spec.get("hide_sme"):
        return env
    return {**env, "LD_PRELOAD": staged_mask(receipt)["device_path"]}


def staged_mask(receipt: dict) -> dict:
    """The SME mask a push staged (stage_mask), which a variant that hides SME needs."""
    if "sme_mask" not in receipt:
        raise ValueError(
            f"the push to device {receipt['device']} staged no SME mask, but a variant hides SME"
        )
    return receipt["sme_mask"]


def stage_models(device: Device, model_dirs: dict[str, str], model: str) -> dict:
    """The model in every format the engines read (format -> its directory), and the config
    file of the format that has one."""
    models = {
        fmt: device.stage(path, f"models/{model}{FORMATS[fmt].device_suffix}")
        for fmt, path in sorted(model_dirs.items())
    }
    where = {"models": models}
    for fmt, path in models.items():
        if FORMATS[fmt].config_file:
            where["model_config"] = f"{path}/{FORMATS[fmt].config_file}"
    return where


def stage_engine(device: Device, engine_dir: str, suffix: str = "") -> str:
    """A built engine's directory (results/engines/<key>/bin, or its gate tool's with
    suffix) on the device, under its key; a second stage of unchanged files moves nothing."""
    return device.stage(engine_dir, f"engines/{Path(engine_dir).parent.name}{suffix}")


def check_receipt(device: Device, receipt: dict) -> None:
    """Verify every pushed file once per job. Runs never push: a file that changed on the
    device since the push is refused by name (rerun the push rule to restore it)."""
    if receipt["device"] != device.name:
        raise ValueError(f"receipt is for device {receipt['device']}, not {device.name}")
    device.verify({f["device_path"]: f["sha256"] for f in receipt["files"]})


def engine_files(record: EngineRecord, receipt: dict) -> dict[str, str]:
    """Device path -> sha256 of the files one engine runs from, re-verified before each run:
    its kind's, and the Python runner where the kind runs through it."""
    kind = record.kind
    files = kind.device_files(record, receipt)
    if kind.through_runner(record):
        files[receipt["runner"]] = sha256_file(RUNNER)
        for module in kind.runner_modules:
            files[receipt["runner_modules"][module.name]] = sha256_file(module)
    return files


def stage_images(device, images: list[tuple[str, str]]) -> dict[str, dict]:
    """Prompt images (name as configured, local file) onto the device, staged like everything
    else (by hash): name -> {device_path, sha256}."""
    return {
        name: {
            "device_path": device.stage(path, f"prompts/{i}-{Path(path).name}"),
            "sha256": sha256_file(path),
        }
        for i, (name, path) in enumerate(images)
    }
