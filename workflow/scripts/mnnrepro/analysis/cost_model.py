"""The constants a prediction prices the counted instructions with (config/cost_model.yaml, read
for one core, SoC and phone model): each with its value, its range and its source, and how the
SoC's cores and memory serve a number of threads. analysis/prediction.py does the arithmetic.

Its interval is stated at a level (LEVEL: the central 80 % of the predicted speedups): the
ranged constants are drawn from their ranges (SAMPLES draws with a fixed seed; each constant
from a triangular distribution whose mode is its value, which is its best estimate) and a
model error is added to each draw's log speedup (`model_error.log_sd`: normal, estimated from
published figures the prediction was held out against, benchmarks/predicted_gain.py). Where
the prediction at the constants' values falls outside (a value at its range's edge), the
interval is widened to hold it (analysis/prediction.py's predict_pair)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from mnnrepro.analysis.token_work import SME_CLASSES
from mnnrepro.config import ConfigError
from mnnrepro.devices.instruction_mix import CLASSES
from mnnrepro.models.shapes import identity

VECTOR_CLASSES = ("dot_matmul", "vector_load_store", "vector_other")
LEVEL = 0.8  # the intervals' level: the central 80 % of the sampled speedups
SAMPLES = 2000
SEED = 20260611  # the article's date: every prediction of the same counts draws the same
# how counted instructions are priced (config key `prediction.pricing`) -> the model error's key
PRICINGS = {"by_class": "log_sd", "per_instruction": "log_sd_per_instruction"}


@dataclass(frozen=True)
class Constant:
    name: str  # its path in the cost model: cores.<core>.core.dot_matmul, ...
    value: float
    low: float
    high: float
    source: str

    @classmethod
    def of(cls, name: str, entry, path: str) -> Constant:
        if not isinstance(entry, dict) or "value" not in entry or not entry.get("source"):
            raise ConfigError(f"{path}: `{name}` needs a value and a source")
        value = float(entry["value"])
        low, high = float(entry.get("low", value)), float(entry.get("high", value))
        if not low <= value <= high or (low <= 0 and not name.endswith("overlap")):
            raise ConfigError(f"{path}: `{name}` needs 0 < low <= value <= high")
        return cls(name, value, low, high, str(entry["source"]))


def entries_of(
    data: dict, core: str, soc: str, model: str, path, pricing: str = "by_class"
) -> dict:
    """Every constant's short name (values()'s keys) -> (its path in the file, its entry): the
    core's cycles per class and overlap by class, its dispatch width per instruction (what the
    other pricing does not use is not read), and the rest either way."""
    try:
        c, s, m = data["cores"][core], data["socs"][soc], data["models"][model]
    except (KeyError, TypeError) as missing:
        raise ConfigError(f"{path}: no {missing} among its cores, socs or models") from None
    entries = {"clock_ghz": (f"cores.{core}.clock_ghz", c.get("clock_ghz"))}
    if pricing == "per_instruction":
        entries["dispatch_width"] = (f"cores.{core}.dispatch_width", c.get("dispatch_width"))
    else:
        for group in ("core", "streaming"):
            for name in CLASSES:
                if name in c.get(group, {}):
                    entries[f"{group}.{name}"] = (f"cores.{core}.{group}.{name}", c[group][name])
        entries["overlap"] = (f"cores.{core}.overlap", c.get("overlap"))
    for group, key, name, where in (
        ("socs", soc, "memory_bandwidth_gb_s", s),
        ("socs", soc, "core_bandwidth_gb_s", s),
        ("models", model, "bytes_per_weight", m),
        ("models", model, "kv_bytes_per_value", m),
    ):
        entries[name] = (f"{group}.{key}.{name}", where.get(name))
    for other, entry in (s.get("per_clock_vs_first") or {}).items():
        entries[f"per_clock.{other}"] = (f"socs.{soc}.per_clock_vs_first.{other}", entry)
    return entries


@dataclass(frozen=True)
class CostModel:
    """The constants one prediction uses: the core's, the SoC's and the phone model's."""

    constants: dict[str, Constant]  # short name (core.dot_matmul, clock_ghz, ...) -> constant
    phone_shape: dict  # the phone's model (what one decoded token reads)
    soc_cores: tuple = ()  # the SoC's cores, fastest first: {core, count, clock_ghz}
    model_error: float = 0.0  # the log speedup's standard deviation the constants leave out
    model_error_source: str = ""
    llvm_mca: dict | None = None  # per_instruction: the core's llvm-mca options (mcpu, mattr...)

    @classmethod
    def read(
        cls, path: str | Path, core: str, soc: str, model: str, pricing: str = "by_class"
    ) -> CostModel:
        """The constants of one core, SoC and phone model, and the model error of `pricing`
        (PRICINGS); per_instruction needs the core's `llvm_mca` and `dispatch_width`."""
        data = yaml.safe_load(Path(path).read_text())
        entries = entries_of(data, core, soc, model, path, pricing)  # an unknown key: refused
        c, s = data["cores"][core], data["socs"][soc]
        mca = c.get("llvm_mca") if pricing == "per_instruction" else None
        if pricing == "per_instruction" and not (mca and c.get("dispatch_width")):
            raise ConfigError(
                f"{path}: cores.{core} needs `llvm_mca` (mcpu, mattr, streaming_mattr) and "
                "`dispatch_width` to price instructions one by one"
            )
        constants = {k: Constant.of(full, entry, str(path)) for k, (full, entry) in entries.items()}
        needed = [f"core.{n}" for n in CLASSES if n not in SME_CLASSES] + [
            f"streaming.{n}" for n in (*SME_CLASSES, *VECTOR_CLASSES) if "streaming" in c
        ]  # a core without SME (no `streaming`): a streaming count is priced nowhere (cycles)
        needed = needed if pricing == "by_class" else []
        missing = [name for name in needed if name not in constants]
        if missing:
            raise ConfigError(f"{path}: cores.{core} has no cycles for {missing}")
        listed = (s.get("cores") or {}).get("list", [])
        others = [c["core"] for c in listed[1:] if f"per_clock.{c['core']}" not in constants]
        if (listed and listed[0]["core"] != core) or others:
            raise ConfigError(
                f"{path}: socs.{soc}.cores must list {core} first and every other core in "
                f"`per_clock_vs_first` (missing: {others})"
            )
        error = model_error(data, path, PRICINGS[pricing])
        shape = data["models"][model]["shape"]
        return cls(constants, shape, tuple(listed), error["value"], error["source"], mca)

    def parallel(self, v: dict[str, float], threads: int) -> float:
        """How many of the prediction's cores `threads` threads are worth, on the SoC's
        fastest cores (each at its clock and work per cycle relative to the first); 1 for one
        thread, and for a SoC without a core list."""
        total, left = 0.0, threads
        for i, c in enumerate(self.soc_cores):
            taken = min(c["count"], left)
            speed = 1.0 if i == 0 else v[f"per_clock.{c['core']}"]
            total += taken * speed * c["clock_ghz"] / self.soc_cores[0]["clock_ghz"]
            left -= taken
        return total if self.soc_cores else 1.0

    @staticmethod
    def bandwidth(v: dict[str, float], threads: int) -> float:
        """The bytes per second `threads` threads read from memory: each core at most what one
        core reaches, all of them at most what the SoC's memory gives."""
        return min(v["memory_bandwidth_gb_s"], threads * v["core_bandwidth_gb_s"]) * 1e9

    def values(self) -> dict[str, float]:
        return {k: c.value for k, c in self.constants.items()}

    def ranged(self) -> dict[str, Constant]:
        """The constants with a range, by their short name (values()'s keys)."""
        return {k: c for k, c in self.constants.items() if c.low < c.high}

    def samples(self) -> list[dict[str, float]]:
        """values() with each ranged constant drawn from its range (module docstring)."""
        rng, ranged = np.random.default_rng(SEED), self.ranged()
        draws = {k: rng.triangular(c.low, c.value, c.high, SAMPLES) for k, c in ranged.items()}
        point = self.values()
        return [{**point, **{k: float(d[i]) for k, d in draws.items()}} for i in range(SAMPLES)]

    def interval(self, gains: list[float]) -> tuple[float, float]:
        """The central LEVEL of the sampled gains (samples()'s, in order), each draw's log
        speedup with a model error drawn besides."""
        errors = np.random.default_rng(SEED + 1).normal(0.0, self.model_error, len(gains))
        logs = np.log1p(np.asarray(gains, dtype=float)) + errors
        low, high = np.quantile(logs, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        return float(np.expm1(low)), float(np.expm1(high))

    def interval_spec(self) -> dict:
        """How the intervals were made (a prediction document's `interval`)."""
        return {
            "level": LEVEL,
            "samples": SAMPLES,
            "seed": SEED,
            "constants": "triangular(low, value, high) each",
            "model_error_log_sd": self.model_error,
            "model_error_source": self.model_error_source,
        }


def model_error(data: dict, path, key: str = "log_sd") -> dict:
    """The cost model's `model_error.<key>`: {value (>= 0), source}."""
    entry = (data.get("model_error") or {}).get(key)
    try:
        if float(entry["value"]) >= 0 and entry["source"]:
            return {"value": float(entry["value"]), "source": str(entry["source"])}
    except (KeyError, TypeError, ValueError):
        pass
    raise ConfigError(f"{path}: `model_error.{key}` needs a value >= 0 and a source")


def recorded_identity(path: str | Path, model: str) -> dict | None:
    """The identity (models/shapes.IDENTITY) of a cost model's model, for a prediction made
    before its document recorded one."""
    shape = ((yaml.safe_load(Path(path).read_text()) or {}).get("models") or {}).get(model, {})
    return identity(shape.get("shape") or {})
