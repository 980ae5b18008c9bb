"""The phone's gain predicted before the phone (config key `prediction`): the instructions each
build executed under QEMU (kernels.csv's ins_* columns, counted at the phone's streaming vector
length on a model with the phone model's layer shapes) turned into cycles on the phone's core
with the cited constants of config/cost_model.yaml, and so into predicted prefill and decode
gains of every compared pair, with an interval and each constant's sensitivity (and on this
host's builds counted by callgrind, checked against its measured times: predict-host.yaml).

Per token (analysis/token_work.py): the profiled invocations share their start-up (loading,
the first token), so a phase's work per token is its profile minus the `startup` profile (a
1-token prompt, 1 generated token) over the tokens it adds: prompt_tokens - 1 in prefill,
generate_tokens - 1 in decode. Where a short prefill (half the prompt) was profiled too, a
prefill's work per token is the two prefills' difference over their prompts', and what a
prefill does once is spread over the prompt the prediction is for (`prediction.prompt_tokens`,
the phone run's; the profiled one's by default).

Cycles: an instruction of a function that runs SME instructions (streaming mode) costs the
SME2 unit's cycles for its class, scalar ones the core's; every other function's, the core's.
Three sets of resources (the core's vector pipes, its integer pipes, the SME2 unit) either add
up (overlap 0) or overlap perfectly (overlap 1, the busiest sets the time).

Time per token: prefill, the cycles at the core's clock; decode, the larger of that and the
bytes one token reads over the memory bandwidth. The emulated model's cycles are scaled to
the phone's model by their weights (models.shape's linear layers and lm_head), the work a
token does in a GEMM-bound transformer.

The interval spans every combination of the ranged constants' low and high; the sensitivity
of a constant is the prediction at its low and at its high with every other at its value."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from mnnrepro.analysis.token_work import SME_CLASSES, mixes, per_token
from mnnrepro.config import ConfigError
from mnnrepro.devices.instruction_mix import CLASSES
from mnnrepro.models.shapes import identity
from mnnrepro.phases import PHASES

VECTOR_CLASSES = ("dot_matmul", "vector_load_store", "vector_other")
INTEGER_CLASSES = ("load_store", "branch", "scalar_other")
MAX_RANGED = 16  # 2**16 corners at most


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


@dataclass(frozen=True)
class CostModel:
    """The constants one prediction uses: the core's, the SoC's and the phone model's."""

    constants: dict[str, Constant]  # short name (core.dot_matmul, clock_ghz, ...) -> constant
    phone_shape: dict  # the phone's model (what one decoded token reads)
    soc_cores: tuple = ()  # the SoC's cores, fastest first: {core, count, clock_ghz}

    @classmethod
    def read(cls, path: str | Path, core: str, soc: str, model: str) -> CostModel:
        data = yaml.safe_load(Path(path).read_text())
        entries = {}
        try:
            c, s, m = data["cores"][core], data["socs"][soc], data["models"][model]
        except (KeyError, TypeError) as missing:
            raise ConfigError(f"{path}: no {missing} among its cores, socs or models") from None
        for group in ("core", "streaming"):
            for name in CLASSES:
                if name in c.get(group, {}):
                    entries[f"{group}.{name}"] = (f"cores.{core}.{group}.{name}", c[group][name])
        entries["clock_ghz"] = (f"cores.{core}.clock_ghz", c.get("clock_ghz"))
        entries["overlap"] = (f"cores.{core}.overlap", c.get("overlap"))
        for group, key, name, where in (
            ("socs", soc, "memory_bandwidth_gb_s", s),
            ("models", model, "bytes_per_weight", m),
        ):
            entries[name] = (f"{group}.{key}.{name}", where.get(name))
        listed = (s.get("cores") or {}).get("list", [])
        for other, entry in (s.get("per_clock_vs_first") or {}).items():
            entries[f"per_clock.{other}"] = (f"socs.{soc}.per_clock_vs_first.{other}", entry)
        constants = {k: Constant.of(full, entry, str(path)) for k, (full, entry) in entries.items()}
        needed = [f"core.{n}" for n in CLASSES if n not in SME_CLASSES] + [
            f"streaming.{n}" for n in (*SME_CLASSES, *VECTOR_CLASSES) if "streaming" in c
        ]  # a core without SME (no `streaming`): a streaming count is priced nowhere (cycles)
        missing = [name for name in needed if name not in constants]
        if missing:
            raise ConfigError(f"{path}: cores.{core} has no cycles for {missing}")
        others = [c["core"] for c in listed[1:] if f"per_clock.{c['core']}" not in constants]
        if (listed and listed[0]["core"] != core) or others:
            raise ConfigError(
                f"{path}: socs.{soc}.cores must list {core} first and every other core in "
                f"`per_clock_vs_first` (missing: {others})"
            )
        return cls(constants, m["shape"], tuple(listed))

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

    def values(self) -> dict[str, float]:
        return {k: c.value for k, c in self.constants.items()}

    def ranged(self) -> dict[str, Constant]:
        """The constants with a range, by their short name (values()'s keys)."""
        return {k: c for k, c in self.constants.items() if c.low < c.high}

    def corners(self) -> list[dict[str, float]]:
        """values() at every combination of the ranged constants' low and high."""
        ranged = self.ranged()
        if len(ranged) > MAX_RANGED:
            raise ConfigError(
                f"the cost model ranges {len(ranged)} constants; at most {MAX_RANGED}"
            )
        choices = itertools.product(*[(c.low, c.high) for c in ranged.values()])
        return [{**self.values(), **dict(zip(ranged, c, strict=True))} for c in choices]


def recorded_identity(path: str | Path, model: str) -> dict | None:
    """The identity (models/shapes.IDENTITY) of a cost model's model, for a prediction made
    before its document recorded one."""
    shape = ((yaml.safe_load(Path(path).read_text()) or {}).get("models") or {}).get(model, {})
    return identity(shape.get("shape") or {})


def weights(shape: dict) -> int:
    """The weights one token multiplies: every layer's attention and MLP projections, and the
    lm_head."""
    hidden, heads = shape["hidden_size"], shape["num_attention_heads"]
    head_dim = shape.get("head_dim", hidden // heads)
    attention = hidden * head_dim * (2 * heads + 2 * shape["num_key_value_heads"])
    mlp = 3 * hidden * shape["intermediate_size"]
    return shape["num_hidden_layers"] * (attention + mlp) + shape["vocab_size"] * hidden


def cycles(mix: dict, v: dict[str, float], parallel: float = 1.0) -> float:
    """The cycles of one token's instructions (mix: per_token's of one phase, every thread's;
    v: constants), the prediction core's: the SME2 unit (one) runs the streaming ones, the
    cores the threads run on (worth `parallel` of it, CostModel.parallel) share the rest."""
    streaming, core = mix["streaming"], mix["core"]
    sme = sum(
        streaming[c] * streaming_cycles(v, c)
        for c in (*SME_CLASSES, *VECTOR_CLASSES)
        if streaming[c]
    )
    vector = sum(core[c] * v[f"core.{c}"] for c in VECTOR_CLASSES) / parallel
    integer = sum((core[c] + streaming[c]) * v[f"core.{c}"] for c in INTEGER_CLASSES) / parallel
    serial, busiest = sme + vector + integer, max(sme, vector, integer)
    return v["overlap"] * busiest + (1 - v["overlap"]) * serial


def streaming_cycles(v: dict[str, float], name: str) -> float:
    if f"streaming.{name}" not in v:
        raise ConfigError(
            f"the cost model's core has no `streaming` cycles for `{name}`, "
            "which the counted instructions need (an SME2 build)"
        )
    return v[f"streaming.{name}"]


def compute_seconds(mix: dict, v: dict[str, float], scale: float, parallel: float) -> float:
    """One token of the phone's model computed: its cycles scaled by the weights, at the
    core's clock."""
    return cycles(mix, v, parallel) * scale / (v["clock_ghz"] * 1e9)


def memory_seconds(v: dict[str, float], read: int) -> float:
    """One decoded token's weights (read of them) over the memory bandwidth."""
    return read * v["bytes_per_weight"] / (v["memory_bandwidth_gb_s"] * 1e9)


def seconds_per_token(
    mix: dict, phase: str, v: dict[str, float], scale: float, read: int, parallel: float = 1.0
) -> float:
    """One token of the phone's model: computed; in decode at least its weights' reading."""
    compute = compute_seconds(mix, v, scale, parallel)
    return compute if phase == "prefill" else max(compute, memory_seconds(v, read))


def gain(
    base: dict,
    treat: dict,
    phase: str,
    v: dict[str, float],
    scale: float,
    read: int,
    parallel: tuple[float, float] = (1.0, 1.0),
):
    """The treatment's throughput over the baseline's, minus 1 (summary.csv's `gain`;
    parallel: what each one's threads are worth, CostModel.parallel)."""
    return (
        seconds_per_token(base, phase, v, scale, read, parallel[0])
        / seconds_per_token(treat, phase, v, scale, read, parallel[1])
        - 1
    )


def predict_pair(
    base: dict, treat: dict, model: CostModel, scale: float, threads: tuple[int, int] = (1, 1)
) -> dict:
    """Per phase: the predicted gain, its interval over every corner of the ranged constants,
    and each ranged constant's swing (the gain at its low and at its high); threads: the
    baseline's and the treatment's."""
    read, point, ranged = weights(model.phone_shape), model.values(), model.ranged()
    corners, out = model.corners(), {}
    for phase in PHASES:

        def at(values, phase=phase):
            parallel = tuple(model.parallel(values, n) for n in threads)
            return gain(base[phase], treat[phase], phase, values, scale, read, parallel)

        gains = [at(values) for values in corners]
        swings = [
            {
                "constant": c.name,
                "at_low": at({**point, k: c.low}),
                "at_high": at({**point, k: c.high}),
            }
            for k, c in ranged.items()
        ]
        swings.sort(key=lambda s: -abs(s["at_high"] - s["at_low"]))
        out[phase] = {
            "gain": at(point),
            "low": min(gains),
            "high": max(gains),
            "sensitivity": swings,
            **point_times(base, treat, phase, model, scale, threads),
        }
    return out


def point_times(
    base: dict, treat: dict, phase: str, model: CostModel, scale: float, threads: tuple[int, int]
) -> dict:
    """At the constants' values: each side's predicted tokens per second (the phone model's),
    and whether its decode is bound by memory."""
    point, read = model.values(), weights(model.phone_shape)
    out: dict = {"tokens_per_s": {}, "memory_bound": {}}
    for side, mix, n in (("baseline", base, threads[0]), ("treatment", treat, threads[1])):
        parallel = model.parallel(point, n)
        seconds = seconds_per_token(mix[phase], phase, point, scale, read, parallel)
        out["tokens_per_s"][side] = 1 / seconds  # bound by memory: longer than its compute
        out["memory_bound"][side] = seconds > compute_seconds(mix[phase], point, scale, parallel)
    return out


def prediction_entry(pair, emulated: str, scale: float, threads, phases, base, treat) -> dict:
    """One pair's prediction from one emulated model: its gains per phase and the mixes."""
    return {
        "pair": pair.key,
        "baseline": pair.baseline,
        "treatment": pair.treatment,
        "model": emulated,
        "scale": scale,
        "threads": list(threads),
        "phases": phases,
        "mix_per_token": {"baseline": base, "treatment": treat},
    }


def prediction_document(kernels: pd.DataFrame, design, spec: dict, context: dict) -> dict:
    """Every compared pair's predicted gains on the phone (spec: config key `prediction`;
    context: the cost model's file, the emulated models' shapes, the bench's token counts, the
    variants' specs, the inputs' hashes)."""
    model = CostModel.read(context["constants"], spec["core"], spec["soc"], spec["model"])
    tokens = {"prefill": context["prompt_tokens"], "decode": context["generate_tokens"]}
    target = spec.get("prompt_tokens", context["prompt_tokens"])  # the phone run's prompt
    waiting = context.get("waiting", {})  # variant -> its engine's waiting functions
    predictions = []
    for emulated, shape in sorted(context["shapes"].items()):
        scale = weights(model.phone_shape) / weights(shape)
        for pair in design.comparison.pairs:
            base, treat = (
                per_token(
                    mixes(kernels, spec["device"], emulated, v, waiting.get(v, "")), tokens, target
                )
                for v in (pair.baseline, pair.treatment)
            )
            threads = tuple(
                context["variants"][v]["runtime"]["thread_num"]
                for v in (pair.baseline, pair.treatment)
            )
            predicted = predict_pair(base, treat, model, scale, threads)
            predictions.append(
                prediction_entry(pair, emulated, scale, threads, predicted, base, treat)
            )
    counted = kernels.loc[kernels["device"] == spec["device"], "profiler"]
    return {
        **{k: spec[k] for k in ("device", "core", "soc", "model")},
        "counted_by": str(counted.iloc[0]) if len(counted) else "",
        "phone_model_weights": weights(model.phone_shape),
        "model_identity": identity(model.phone_shape),  # what it is scored on (shapes.IDENTITY)
        "inputs": context["inputs"],
        "claims": dict(design.comparison.claims),
        # the benchmark predicted for (the phone run's prompt), and the one profiled
        "bench": {"prompt_tokens": target, "generate_tokens": context["generate_tokens"]},
        "profiled_bench": {k: context[k] for k in ("prompt_tokens", "generate_tokens")},
        "variants": {
            name: context["variants"][name]
            for pair in design.comparison.pairs
            for name in (pair.baseline, pair.treatment)
        },
        "predictions": predictions,
        "constants": [vars(c) for c in model.constants.values()],
    }
