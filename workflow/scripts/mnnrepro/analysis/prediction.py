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
bytes one token reads (its weights, and the KV cache of every position before it) over the
bandwidth its threads reach: one core's at 1 thread, at most the SoC's. The emulated model's
cycles are scaled to the phone's model by their weights (models.shape's linear layers and
lm_head), the work a token does in a GEMM-bound transformer.

The interval is the central 80 % of the gains with the ranged constants drawn from their
ranges and a model error besides (analysis/cost_model.py); the sensitivity of a constant is
the prediction at its low and at its high with every other at its value."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import pandas as pd

from mnnrepro.analysis.cost_model import LEVEL, VECTOR_CLASSES, CostModel
from mnnrepro.analysis.instruction_prices import UOPS, unit_columns
from mnnrepro.analysis.token_work import CLASS_COLUMNS, SME_CLASSES, mixes, per_token
from mnnrepro.config import ConfigError
from mnnrepro.models.shapes import identity
from mnnrepro.phases import PHASES

INTEGER_CLASSES = ("load_store", "branch", "scalar_other")
SME2_UNIT = "CME"  # the scheduling model's units of the SME2 unit (C1UUnitCME*), one per SoC


def weights(shape: dict) -> int:
    """The weights one token multiplies: every layer's attention and MLP projections, and the
    lm_head."""
    hidden, heads = shape["hidden_size"], shape["num_attention_heads"]
    attention = hidden * head_dim(shape) * (2 * heads + 2 * shape["num_key_value_heads"])
    mlp = 3 * hidden * shape["intermediate_size"]
    return shape["num_hidden_layers"] * (attention + mlp) + shape["vocab_size"] * hidden


def cycles(mix: dict, v: dict[str, float], parallel: float = 1.0) -> float:
    """The cycles of one token's instructions (mix: per_token's of one phase, every thread's;
    v: constants), the prediction core's: the SME2 unit (one) runs the streaming ones, the
    cores the threads run on (worth `parallel` of it, CostModel.parallel) share the rest. A
    mix priced instruction by instruction (unit pressures: analysis/instruction_prices.py)
    is unit_cycles'."""
    if UOPS in mix["core"]:
        return unit_cycles(mix, v, parallel)
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


def unit_cycles(mix: dict, v: dict[str, float], parallel: float = 1.0) -> float:
    """The cycles of one token priced instruction by instruction: the busiest of the core's
    units (each unit's pressure, summed over the token's instructions; the SME2 unit's, one
    for every thread, whole; a core's, shared by the cores the threads run on), or the micro-
    ops over the dispatch width of those cores if that is longer."""
    core, streaming = mix["core"], mix["streaming"]

    def busy(unit: str) -> float:
        total = core[unit] + streaming[unit]
        return total if SME2_UNIT in unit else total / parallel

    busiest = max(busy(unit) for unit in core if unit != UOPS)
    dispatch = (core[UOPS] + streaming[UOPS]) / (v["dispatch_width"] * parallel)
    return max(busiest, dispatch)


def streaming_cycles(v: dict[str, float], name: str) -> float:
    if f"streaming.{name}" not in v:
        raise ConfigError(
            f"the cost model's core has no `streaming` cycles for `{name}`, "
            "which the counted instructions need (an SME2 build)"
        )
    return v[f"streaming.{name}"]


@dataclass(frozen=True)
class Target:
    """What one token of the phone's model is beside the counted instructions: `scale` times
    the emulated model's work; a decoded token reads `weights` weights and `kv_values` cached
    keys and values (kv_values())."""

    scale: float
    weights: int
    kv_values: float = 0.0

    @classmethod
    def of(cls, model: CostModel, scale: float, prompt: int = 0, generated: int = 0) -> Target:
        return cls(
            scale, weights(model.phone_shape), kv_values(model.phone_shape, prompt, generated)
        )


def head_dim(shape: dict) -> int:
    """An attention head's width: the shape's, else the hidden size over the heads."""
    return shape.get("head_dim", shape["hidden_size"] // shape["num_attention_heads"])


def kv_values(shape: dict, prompt: int, generated: int) -> float:
    """The cached keys and values one decoded token reads, on average over a decode of
    `generated` tokens after a `prompt`-token prompt: every layer's K and V of each position
    before it (prompt + generated / 2 on average)."""
    per_position = 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"]
    return per_position * head_dim(shape) * (prompt + generated / 2)


def compute_seconds(mix: dict, v: dict[str, float], scale: float, parallel: float) -> float:
    """One token of the phone's model computed: its cycles scaled by the weights, at the
    core's clock."""
    return cycles(mix, v, parallel) * scale / (v["clock_ghz"] * 1e9)


def memory_seconds(v: dict[str, float], target: Target, threads: int) -> float:
    """One decoded token's reading of its weights and of the KV cache, at the bandwidth its
    threads reach (CostModel.bandwidth: one core's at 1 thread, at most the SoC's)."""
    read = target.weights * v["bytes_per_weight"] + target.kv_values * v["kv_bytes_per_value"]
    return read / CostModel.bandwidth(v, threads)


def seconds_per_token(
    mix: dict, phase: str, v: dict[str, float], target: Target, model: CostModel, threads: int
) -> float:
    """One token of the phone's model on `threads` threads: computed; in decode at least its
    reading of memory."""
    compute = compute_seconds(mix, v, target.scale, model.parallel(v, threads))
    return compute if phase == "prefill" else max(compute, memory_seconds(v, target, threads))


def gain(base, treat, phase, v, target: Target, model: CostModel, threads=(1, 1)) -> float:
    """The treatment's throughput over the baseline's, minus 1 (summary.csv's `gain`;
    threads: the baseline's and the treatment's)."""
    return (
        seconds_per_token(base[phase], phase, v, target, model, threads[0])
        / seconds_per_token(treat[phase], phase, v, target, model, threads[1])
        - 1
    )


def error_interval(gain: float, log_sd: float) -> tuple[float, float]:
    """A gain's interval at the cost model's level (LEVEL) from a normal model error of its
    log speedup alone (log_sd): what pricing instruction by instruction leaves, where no
    constant of a prefill gain is ranged."""
    half = NormalDist().inv_cdf(0.5 + LEVEL / 2) * log_sd
    low, high = ((1 + gain) * math.exp(k * half) - 1 for k in (-1, 1))
    return low, high


def unit_gains(
    priced: pd.DataFrame,
    where: tuple[str, str],
    pair: tuple[str, str],
    tokens: dict,
    prompt: int,
    cost: CostModel,
    target: Target,
    threads: tuple[int, int],
    waiting: str = "",
) -> dict[str, float]:
    """Per phase, a pair's gain from its counts priced instruction by instruction (priced:
    analysis/instruction_prices.priced_run's table; where: the counting device and model;
    tokens: the profiled phases'), at the constants' values, for a `prompt`-token prompt."""
    columns = unit_columns(priced)
    base, treat = (
        per_token(mixes(priced, *where, v, waiting, columns), tokens, prompt) for v in pair
    )
    v = cost.values()
    return {phase: gain(base, treat, phase, v, target, cost, threads) for phase in PHASES}


def predict_pair(
    base: dict, treat: dict, model: CostModel, target: Target, threads: tuple[int, int] = (1, 1)
) -> dict:
    """Per phase: the predicted gain, its interval at the cost model's level (the constants
    drawn from their ranges, a model error besides: CostModel.interval) and each ranged
    constant's swing (the gain at its low and at its high); threads: the baseline's and the
    treatment's."""
    point, ranged, drawn, out = model.values(), model.ranged(), model.samples(), {}
    for phase in PHASES:

        def at(values, phase=phase):
            return gain(base, treat, phase, values, target, model, threads)

        centre, (low, high) = at(point), model.interval([at(values) for values in drawn])
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
            "gain": centre,
            "low": min(low, centre),
            "high": max(high, centre),
            "sensitivity": swings,
            **point_times(base, treat, phase, model, target, threads),
        }
    return out


def point_times(
    base: dict, treat: dict, phase: str, model: CostModel, target: Target, threads: tuple
) -> dict:
    """At the constants' values: each side's predicted tokens per second (the phone model's),
    and whether its decode is bound by memory."""
    point = model.values()
    out: dict = {"tokens_per_s": {}, "memory_bound": {}}
    for side, mix, n in (("baseline", base, threads[0]), ("treatment", treat, threads[1])):
        seconds = seconds_per_token(mix[phase], phase, point, target, model, n)
        compute = compute_seconds(mix[phase], point, target.scale, model.parallel(point, n))
        out["tokens_per_s"][side] = 1 / seconds  # bound by memory: longer than its compute
        out["memory_bound"][side] = seconds > compute
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


def phone_prompt(spec: dict, context: dict) -> int:
    """The prompt the phone run is predicted for: the prediction's own `prompt_tokens`, else
    the profiled benchmark's."""
    return spec.get("prompt_tokens", context["prompt_tokens"])


def prediction_document(
    kernels: pd.DataFrame, design, spec: dict, context: dict, priced: bool = False
) -> dict:
    """Every compared pair's predicted gains on the phone (spec: config key `prediction`;
    context: the cost model's file, the emulated models' shapes, the bench's token counts, the
    variants' specs, the inputs' hashes; kernels: kernels.csv, or with `priced` its rows priced
    instruction by instruction, instruction_prices.priced_run's, and context's `priced_by`)."""
    pricing = "per_instruction" if priced else "by_class"
    model = CostModel.read(context["constants"], spec["core"], spec["soc"], spec["model"], pricing)
    columns = unit_columns(kernels) if priced else CLASS_COLUMNS
    prompt = phone_prompt(spec, context)
    predictions = pair_predictions(kernels, columns, design, spec, context, model)
    counted = kernels.loc[kernels["device"] == spec["device"], "profiler"]
    return {
        **{k: spec[k] for k in ("device", "core", "soc", "model")},
        "counted_by": str(counted.iloc[0]) if len(counted) else "",
        "pricing": pricing,  # by class, or each instruction by `priced_by`
        "priced_by": context.get("priced_by", "config/cost_model.yaml's cycles per class"),
        "phone_model_weights": weights(model.phone_shape),
        "model_identity": identity(model.phone_shape),  # what it is scored on (shapes.IDENTITY)
        "inputs": context["inputs"],
        "claims": dict(design.comparison.claims),
        # the benchmark predicted for (the phone run's prompt), and the one profiled
        "bench": {"prompt_tokens": prompt, "generate_tokens": context["generate_tokens"]},
        "profiled_bench": {k: context[k] for k in ("prompt_tokens", "generate_tokens")},
        "variants": {
            name: context["variants"][name]
            for pair in design.comparison.pairs
            for name in (pair.baseline, pair.treatment)
        },
        "predictions": predictions,
        "interval": model.interval_spec(),  # how each prediction's low and high were made
        "constants": [vars(c) for c in model.constants.values()],
    }


def pair_predictions(
    kernels: pd.DataFrame, columns: dict, design, spec: dict, context: dict, model: CostModel
) -> list[dict]:
    """Each counted model's prediction of each compared pair (prediction_document's
    arguments; columns: the counts its rows are priced by)."""
    tokens = {"prefill": context["prompt_tokens"], "decode": context["generate_tokens"]}
    prompt = phone_prompt(spec, context)
    waiting = context.get("waiting", {})  # variant -> its engine's waiting functions
    predictions = []
    for emulated, shape in sorted(context["shapes"].items()):
        scale = weights(model.phone_shape) / weights(shape)
        for pair in design.comparison.pairs:
            base, treat = (
                per_token(
                    mixes(kernels, spec["device"], emulated, v, waiting.get(v, ""), columns),
                    tokens,
                    prompt,
                )
                for v in (pair.baseline, pair.treatment)
            )
            threads = tuple(
                context["variants"][v]["runtime"]["thread_num"]
                for v in (pair.baseline, pair.treatment)
            )
            target = Target.of(model, scale, prompt, context["generate_tokens"])
            predicted = predict_pair(base, treat, model, target, threads)
            predictions.append(
                prediction_entry(pair, emulated, scale, threads, predicted, base, treat)
            )
    return predictions
