"""What a `prediction` (the phone's gain predicted from an emulated CPU's instruction mix,
analysis/prediction.py) needs of the rest of the config, checked before any job runs, and
where its cost model's file is."""

from __future__ import annotations

from pathlib import Path

import yaml

from mnnrepro.analysis.prediction import CostModel
from mnnrepro.config import ConfigError
from mnnrepro.devices.kinds import device_kind

ROOT = Path(__file__).resolve().parents[4]  # where a relative `prediction.constants` lies


def constants_path(spec: dict) -> Path:
    """The cost model's file (`prediction.constants`, relative to the workflow's root)."""
    return ROOT / spec.get("constants", "config/cost_model.yaml")


def prediction_problems(config: dict) -> list[str]:
    """What a `prediction` needs of the rest of the config: an emulated device that is
    profiled, synthetic models (their weights are known), and its keys in the cost model."""
    spec = config.get("prediction")
    if not spec:
        return []
    device, attribution = spec["device"], config.get("attribution", {})
    problems = []
    if (
        device not in config["devices"]
        or not device_kind(device, config["devices"][device]).emulated
    ):
        problems.append(f"config key `prediction.device`: {device!r} is not a QEMU device")
    elif not attribution.get("enabled") or device not in attribution.get("devices", [device]):
        problems.append(
            f"config key `prediction.device`: {device!r} is not profiled; set "
            "`attribution.enabled: true` (and list it in `attribution.devices`, if given)"
        )
    real = sorted(m for m, spec in config["models"].items() if "synthetic" not in spec)
    if real:
        problems.append(
            f"config key `prediction`: models {real} are not synthetic; the prediction scales "
            "by a synthetic model's weights"
        )
    try:
        CostModel.read(constants_path(spec), spec["core"], spec["soc"], spec["model"])
    except (ConfigError, OSError, yaml.YAMLError) as error:
        problems.append(f"config key `prediction.constants`: {error}")
    return problems
