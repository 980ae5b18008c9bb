"""What a `prediction` (the phone's gain predicted from an emulated CPU's instruction mix,
analysis/prediction.py, or one made earlier and registered, analysis/prediction_score.py) needs
of the rest of the config, checked before any job runs, and where its files are."""

from __future__ import annotations

from pathlib import Path

import yaml

from mnnrepro.analysis.cost_model import CostModel
from mnnrepro.analysis.prediction_score import registered_prediction
from mnnrepro.config import ConfigError
from mnnrepro.design import pairs_of
from mnnrepro.devices.kinds import counts_instructions, device_kind
from mnnrepro.errors import DataError

ROOT = Path(__file__).resolve().parents[4]  # where a relative path of `prediction` lies
MADE_HERE = ("device", "core", "soc", "model")
LLVM_MCA_RECEIPT = "resources/llvm-mca/receipt.json"  # rule fetch_llvm_mca's


def constants_path(spec: dict) -> Path:
    """The cost model's file (`prediction.constants`, relative to the workflow's root)."""
    return ROOT / spec.get("constants", "config/cost_model.yaml")


def prediction_inputs(spec: dict, results_key: str, found: dict, profiles: list[str]) -> dict:
    """What rule predict_gain reads: a registered prediction's file, or what a prediction
    made here needs (kernels.csv; priced per instruction, the counting device's profiles and
    the fetched llvm-mca: LLVM_MCA_RECEIPT); the cost model (the predicted model's shape), and
    what says which models the run measured (found: their manifests, and the layouts of those
    it has in MNN's format: what the engine loaded)."""
    measured = {"constants": str(constants_path(spec)), **found}
    if "registered" in spec:
        return {"registered": str(ROOT / spec["registered"]), **measured}
    if spec.get("pricing") == "per_instruction":
        measured = {**measured, "profiles": profiles, "llvm_mca": LLVM_MCA_RECEIPT}
    return {"kernels": f"results/{results_key}/kernels.csv", **measured}


def llvm_mca_pins(spec: dict | None) -> dict:
    """The pinned llvm-mca packages of a prediction's cost model (its `llvm_mca`: rule
    fetch_llvm_mca's params); none where nothing is priced per instruction."""
    if not spec or spec.get("pricing") != "per_instruction":
        return {}
    path = constants_path(spec)
    pins = (yaml.safe_load(path.read_text()) or {}).get("llvm_mca")
    if not isinstance(pins, dict) or not pins.get("packages") or not pins.get("bin"):
        raise ConfigError(f"{path}: `llvm_mca` needs `bin` and the pinned `packages`")
    return pins


def prediction_problems(config: dict) -> list[str]:
    """What a `prediction` needs of the rest of the config."""
    spec = config.get("prediction")
    if not spec:
        return []
    if "registered" in spec:
        extra = sorted(set(spec) - {"registered", "sha256", "commit"})
        if extra:
            return [f"config key `prediction`: `registered` takes no {extra} (it was made)"]
        return registered_problems(config, spec["registered"], spec.get("sha256")) or (
            commit_problems(spec)
        )
    missing = [k for k in MADE_HERE if k not in spec]
    if missing:
        return [f"config key `prediction`: give `registered`, or {list(MADE_HERE)} (no {missing})"]
    return made_here_problems(config, spec)


def registered_problems(config: dict, name: str, pinned: str | None) -> list[str]:
    """A registered prediction: the file its sha256 pin names (frozen when it was registered:
    one changed since is refused before any phone time), a readable prediction that predicts
    a pair this config compares (by its key: `comparison`, `comparison.also.<i>`)."""
    try:
        document = registered_prediction(ROOT / name, name)
    except DataError as error:
        return [f"config key `prediction.registered`: {error}"]
    if document["registered"]["sha256"] != pinned:
        return [
            f"config key `prediction.sha256`: {name} has sha256 "
            f"{document['registered']['sha256']}, not the pinned {pinned}: it changed after it "
            "was registered (register it again, with its new sha256, only if that is meant)"
        ]
    keys = [p.key for p in pairs_of(config["comparison"])]
    predicted = sorted({p["pair"] for p in document["predictions"]})
    if not set(predicted) & set(keys):
        return [
            f"config key `prediction.registered`: {name} predicts the pairs {predicted}, "
            f"none of this config's {keys}"
        ]
    return []


def commit_problems(spec: dict) -> list[str]:
    """A pinned `prediction.commit` is the one the registered file says it was made at."""
    pinned = spec.get("commit")
    if not pinned:
        return []
    measured = registered_prediction(ROOT / spec["registered"])["registered"]["measured"] or {}
    made_at = str(measured.get("commit") or "")
    if made_at and (made_at.startswith(pinned) or pinned.startswith(made_at)):
        return []
    return [
        f"config key `prediction.commit`: {spec['registered']} says it was made at "
        f"{made_at or 'no commit'}, not the pinned {pinned}"
    ]


def made_here_problems(config: dict, spec: dict) -> list[str]:
    """A prediction made here needs a profiled device that counts instructions, synthetic
    models (their weights are known), and its keys in the cost model."""
    device, attribution = spec["device"], config.get("attribution", {})
    problems = []
    if device not in config["devices"] or not counts_instructions(
        device, config["devices"][device]
    ):
        problems.append(
            f"config key `prediction.device`: {device!r} counts no instructions (a QEMU "
            "device, or a local one with `profiler: callgrind`)"
        )
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
    pricing = spec.get("pricing", "by_class")
    try:
        CostModel.read(constants_path(spec), spec["core"], spec["soc"], spec["model"], pricing)
        llvm_mca_pins(spec)  # the fetch's pins, where it prices per instruction
    except (ConfigError, OSError, yaml.YAMLError) as error:
        problems.append(f"config key `prediction.constants`: {error}")
    kind = config["devices"].get(device) and device_kind(device, config["devices"][device])
    if pricing == "per_instruction" and kind and not kind.emulated:
        problems.append(
            f"config key `prediction.pricing`: per_instruction prices the arm64 encodings QEMU "
            f"counts; {device!r} is not a QEMU device (by_class prices its classes)"
        )
    return problems
