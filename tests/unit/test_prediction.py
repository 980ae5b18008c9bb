"""The cost model that predicts a phone's gain from the emulated instruction mix
(analysis/prediction.py, config/cost_model.yaml): its constants are read with their sources,
bad input gets one line naming the key, and the arithmetic does what the docstring says. The
instruction counts are a real QEMU profile's (tests/data/prediction/kernels-ort-vl512.csv:
ONNX Runtime's KleidiAI pair on the emulated 512-bit SME2 CPU, tiny synthetic model)."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mnnrepro.analysis.cost_model import CostModel
from mnnrepro.analysis.prediction import (
    Target,
    cycles,
    kv_values,
    memory_seconds,
    predict_pair,
    weights,
)
from mnnrepro.analysis.token_work import mixes, per_token
from mnnrepro.config import ConfigError
from mnnrepro.devices.instruction_mix import CLASSES
from mnnrepro.engines.llamacpp.kind import LlamaCppEngine
from mnnrepro.engines.mnn_source.kind import BuiltEngine
from mnnrepro.engines.mnn_wheel.kind import PrebuiltEngine
from mnnrepro.errors import DataError
from mnnrepro.models.shapes import SHAPES
from mnnrepro.plan.prediction import prediction_problems

ROOT = Path(__file__).resolve().parents[2]
COSTS = ROOT / "config" / "cost_model.yaml"
KERNELS = ROOT / "tests" / "data" / "prediction" / "kernels-ort-vl512.csv"
DEVICE = "qemu-sme2-vl512"
TOKENS = {"prefill": 32, "decode": 8}  # the run's bench: prompt_tokens, generate_tokens


def x300() -> CostModel:
    return CostModel.read(COSTS, "c1-ultra", "dimensity-9500", "qwen3-vl-4b")


def real_mixes():
    kernels = pd.read_csv(KERNELS, keep_default_na=False, na_values=[""])
    return {
        v: per_token(mixes(kernels, DEVICE, "synth-tiny", v), TOKENS)
        for v in ("ort-no-kleidiai", "ort-default")
    }


def test_every_constant_has_a_source_and_a_range_around_its_value():
    model = x300()
    assert model.constants and all(c.source for c in model.constants.values())
    assert all(c.low <= c.value <= c.high for c in model.constants.values())
    # what the cost model prices: every class outside streaming mode but SME's, every SME and
    # vector class in it (the scalar ones stay on the core)
    assert {f"core.{c}" for c in CLASSES if not c.startswith("sme")} <= set(model.constants)


def test_a_constant_without_a_source_or_a_missing_key_is_one_line_naming_it(tmp_path):
    data = yaml.safe_load(COSTS.read_text())
    del data["cores"]["c1-ultra"]["core"]["branch"]["source"]
    broken = tmp_path / "costs.yaml"
    broken.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"`cores.c1-ultra.core.branch` needs a value and a"):
        CostModel.read(broken, "c1-ultra", "dimensity-9500", "qwen3-vl-4b")
    with pytest.raises(ConfigError, match="no 'm9' among its cores, socs or models"):
        CostModel.read(COSTS, "c1-ultra", "dimensity-9500", "m9")
    data = yaml.safe_load(COSTS.read_text())
    data["cores"]["c1-ultra"]["clock_ghz"]["low"] = 5.0
    broken.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"`cores.c1-ultra.clock_ghz` needs 0 < low <= value"):
        CostModel.read(broken, "c1-ultra", "dimensity-9500", "qwen3-vl-4b")


def test_weights_are_the_linear_layers_and_the_lm_head():
    # Qwen3-VL-4B's language model: 36 layers of q, k, v, o and the MLP, and the lm_head
    shape = x300().phone_shape
    layer = 2560 * 128 * (2 * 32 + 2 * 8) + 3 * 2560 * 9728
    assert weights(shape) == 36 * layer + 151936 * 2560
    tiny = SHAPES["tiny"]
    assert weights(tiny) == 2 * (64 * 16 * (2 * 4 + 2 * 2) + 3 * 64 * 128) + 1024 * 64


def test_overlap_runs_from_the_sum_of_the_resources_to_the_busiest():
    v = x300().values()
    mix = real_mixes()["ort-default"]["prefill"]
    serial, parallel = cycles(mix, {**v, "overlap": 0.0}), cycles(mix, {**v, "overlap": 1.0})
    assert 0 < parallel < serial
    assert cycles(mix, {**v, "overlap": 0.5}) == pytest.approx((serial + parallel) / 2)


def test_a_phase_per_token_is_its_profile_less_the_start_up():
    kernels = pd.read_csv(KERNELS, keep_default_na=False, na_values=[""])
    totals = mixes(kernels, DEVICE, "synth-tiny", "ort-default")
    mix = per_token(totals, TOKENS)["prefill"]
    for group in ("streaming", "core"):
        for c in ("sme_other", "scalar_other"):  # both ran in the start-up as well
            added = totals["prefill"][group][c] - totals["startup"][group][c]
            assert mix[group][c] == pytest.approx(added / (TOKENS["prefill"] - 1))
    # the KleidiAI SME2 GEMM is what prefill adds with KleidiAI on; nothing of SME without it
    assert mix["streaming"]["sme_outer_product"] > 0
    off = per_token(mixes(kernels, DEVICE, "synth-tiny", "ort-no-kleidiai"), TOKENS)
    assert sum(off["prefill"]["streaming"].values()) == 0


def test_the_prediction_has_its_interval_and_sensitivities_and_moves_with_the_sme2_unit():
    model, got = x300(), real_mixes()
    base, treat = got["ort-no-kleidiai"], got["ort-default"]
    scale = weights(model.phone_shape) / weights(SHAPES["tiny"])
    predicted = predict_pair(base, treat, model, Target.of(model, scale))
    for phase in ("prefill", "decode"):
        p = predicted[phase]
        # the ranges move it (a range applied under the wrong name moved nothing here once)
        assert p["low"] <= p["gain"] <= p["high"] and p["low"] < p["high"]
        top = p["sensitivity"][0]
        assert top["at_low"] != top["at_high"]
        names = [s["constant"] for s in p["sensitivity"]]
        assert sorted(names) == sorted(c.name for c in model.ranged().values())
    # a slower SME2 unit (each outer product and ZA move twice as long) predicts a smaller
    # prefill gain: the treatment's prefill runs them, the baseline's does not
    slow = CostModel(
        {
            name: (
                c
                if not name.startswith("streaming.sme")
                else type(c)(c.name, 2 * c.value, 2 * c.low, 2 * c.high, c.source)
            )
            for name, c in model.constants.items()
        },
        model.phone_shape,
    )
    slower = predict_pair(base, treat, slow, Target.of(slow, scale))["prefill"]["gain"]
    assert slower < predicted["prefill"]["gain"]


def test_threads_share_one_sme2_unit_and_take_the_fastest_cores_first(tmp_path):
    model, got = x300(), real_mixes()
    v = model.values()
    premium = v["per_clock.c1-premium"] * 3.5 / 4.21  # the SoC's list: 4.21 GHz, then 3.5 GHz
    assert model.parallel(v, 1) == 1.0
    assert model.parallel(v, 4) == pytest.approx(1 + 3 * premium)
    assert model.parallel(v, 5) > model.parallel(v, 4)  # then a C1-Pro
    # the same mix on 4 threads: the NEON build's work spreads over 4 cores, the SME2 build's
    # streaming part stays on its one SME2 unit, so the prefill gain shrinks
    base, treat = got["ort-no-kleidiai"], got["ort-default"]
    scale = weights(model.phone_shape) / weights(SHAPES["tiny"])
    one = predict_pair(base, treat, model, Target.of(model, scale), (1, 1))["prefill"]["gain"]
    four = predict_pair(base, treat, model, Target.of(model, scale), (4, 4))["prefill"]["gain"]
    assert four < one
    data = yaml.safe_load(COSTS.read_text())
    del data["socs"]["dimensity-9500"]["per_clock_vs_first"]["c1-pro"]
    broken = tmp_path / "costs.yaml"
    broken.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError, match=r"every other core in `per_clock_vs_first` \(missing: \['c1-pro'\]\)"
    ):
        CostModel.read(broken, "c1-ultra", "dimensity-9500", "qwen3-vl-4b")


def test_decode_bound_by_memory_in_both_builds_predicts_no_gain():
    model, got = x300(), real_mixes()
    scale = weights(model.phone_shape) / weights(SHAPES["tiny"])
    starved = CostModel(
        {
            **model.constants,
            "memory_bandwidth_gb_s": type(model.constants["memory_bandwidth_gb_s"])(
                "memory_bandwidth_gb_s", 0.001, 0.001, 0.001, "a test's starved memory"
            ),
        },
        model.phone_shape,
    )
    target = Target.of(starved, scale)
    decode = predict_pair(got["ort-no-kleidiai"], got["ort-default"], starved, target)["decode"]
    assert decode["gain"] == 0 and all(decode["memory_bound"].values())


def test_missing_counts_are_one_line_naming_kernels_csv():
    kernels = pd.read_csv(KERNELS, keep_default_na=False, na_values=[""])
    without = kernels[kernels["phase"] != "startup"]
    with pytest.raises(DataError, match=r"kernels\.csv: no instruction counts of ort-default st"):
        mixes(without, DEVICE, "synth-tiny", "ort-default")


def test_a_prediction_needs_a_profiled_counting_device_and_synthetic_models():
    config = yaml.safe_load((ROOT / "config" / "predict-x300.yaml").read_text())
    config["mnn"] = {"source": {"path": "."}}
    assert prediction_problems(config) == []
    config["attribution"] = {"enabled": False}
    assert prediction_problems(config) == [
        "config key `prediction.device`: 'qemu-sme2-vl512' is not profiled; set "
        "`attribution.enabled: true` (and list it in `attribution.devices`, if given)"
    ]
    config["prediction"]["device"] = "host"
    config["devices"]["host"] = {"local": {}}
    config["models"]["real"] = {"modelscope": {"repo": "MNN/x"}}
    assert prediction_problems(config) == [
        "config key `prediction.device`: 'host' counts no instructions (a QEMU device, or a "
        "local one with `profiler: callgrind`)",
        "config key `prediction`: models ['real'] are not synthetic; the prediction scales by "
        "a synthetic model's weights",
    ]
    config["devices"]["host"] = {"local": {"profiler": "callgrind"}}  # this host, counted
    del config["models"]["real"]
    assert prediction_problems(config) == [
        "config key `prediction.device`: 'host' is not profiled; set `attribution.enabled: "
        "true` (and list it in `attribution.devices`, if given)"
    ]


def test_an_engines_waiting_functions_are_left_out_of_the_work():
    kernels = pd.read_csv(KERNELS, keep_default_na=False, na_values=[""])
    rows = kernels[
        (kernels["variant"] == "ort-default")
        & (kernels["phase"] == "prefill")
        & kernels["instructions"].notna()
        & (kernels["ins_sme_outer_product"].fillna(0) == 0)
    ]
    busiest = rows.sort_values("instructions").iloc[-1]["symbol"]  # a core function's, real
    whole = mixes(kernels, DEVICE, "synth-tiny", "ort-default")
    waited = mixes(kernels, DEVICE, "synth-tiny", "ort-default", waiting=re.escape(busiest))
    for phase, groups in waited.items():
        moved = groups["waiting"]
        assert (groups["streaming"] == whole[phase]["streaming"]).all()
        assert (groups["core"] + moved == whole[phase]["core"]).all()
    assert waited["prefill"]["waiting"].sum() > 0
    v = x300().values()
    less = cycles(per_token(waited, TOKENS)["prefill"], v)
    assert less < cycles(per_token(whole, TOKENS)["prefill"], v)


def test_the_waiting_functions_are_the_thread_pools_not_the_tasks():
    # symbols of MNN 3.6.1's 4-thread profile under QEMU (predicted_gain-4-threads.md's run)
    pool = [
        "_ZNSt6thread11_State_implINS_8_InvokerISt5tupleIJZN3MNN10ThreadPoolC4EiEUlvE_EEEEE6_M_runEv",
        "_ZN3MNN10ThreadPool15enqueueInternalEPSt4pairISt8functionIFviEEiEi",
    ]
    tasks = [
        "_ZZN3MNN12CPUAttention9onExecuteERKSt6vectorIPNS_6TensorESaIS3_EES7_ENKUliE0_clEi",
        "_ZN3MNN26DenseConvInt8TiledExecutor9onExecuteERKSt6vectorIPNS_6TensorESaIS3_EES7_",
        "MNNGemmInt8AddBiasScale16x32_SME2_w4_Fp16",
    ]
    for kind in (PrebuiltEngine, BuiltEngine):
        assert all(re.search(kind.waiting_functions, s) for s in pool)
        assert not any(re.search(kind.waiting_functions, s) for s in tasks)
    # ggml's barrier and a secondary thread's polling, not the node computations it calls
    llama = LlamaCppEngine.waiting_functions
    assert re.search(llama, "ggml_barrier") and re.search(
        llama, "ggml_graph_compute_secondary_thread"
    )
    assert not any(
        re.search(llama, s) for s in ("ggml_graph_compute_thread", "ggml_compute_forward_mul_mat")
    )


def test_a_prediction_for_another_prompt_without_a_short_prefill_is_one_line():
    """The real profile holds no short prefill: at its own prompt the prefill per token is the
    profile's less the start-up's; for another prompt (what a prefill does once cannot be told
    apart) it is refused, naming what is missing."""
    kernels = pd.read_csv(KERNELS, keep_default_na=False, na_values=[""])
    totals = mixes(kernels, DEVICE, "synth-tiny", "ort-default")
    assert per_token(totals, TOKENS, TOKENS["prefill"]) == per_token(totals, TOKENS)
    with pytest.raises(DataError, match="no prefill_short profile, which a prediction for a 512"):
        per_token(totals, TOKENS, 512)


def test_a_prediction_made_for_one_prompt_is_made_again_for_another():
    """The committed X300 prediction (made for 512 tokens from profiles at 64 and 32): for a
    128-token prompt what a prefill does once is spread over 127 tokens instead of 511."""
    from mnnrepro.analysis.prediction_score import registered_prediction
    from mnnrepro.analysis.token_work import for_prompt

    document = registered_prediction(ROOT / "benchmarks/results/predicted_gain.json")
    mix = document["predictions"][0]["mix_per_token"]["baseline"]
    assert for_prompt(mix, 512, 512)["prefill"] == mix["prefill"]
    shorter = for_prompt(mix, 512, 128)["prefill"]
    for group, counts in mix["prefill"].items():
        for c, per in counts.items():
            once = mix["prefill_once"][group][c]
            assert shorter[group][c] == pytest.approx(per + once * (1 / 127 - 1 / 511))
    assert sum(sum(g.values()) for g in mix["prefill_once"].values()) > 0  # so it can fail
    without = {k: v for k, v in mix.items() if k != "prefill_once"}
    with pytest.raises(DataError, match="no prefill_once"):
        for_prompt(without, 512, 128)


def test_a_core_without_sme_prices_the_hosts_counts_and_refuses_an_sme2_builds():
    """cores.epyc-zen4 (this host's, config/predict-host.yaml) has no `streaming` cycles: the
    NEON build's counts price on it, the SME2 build's are one line, never priced at 0."""
    host = CostModel.read(COSTS, "epyc-zen4", "reference-host", "qwen3-0.6b")
    assert not any(name.startswith("streaming.") for name in host.constants)
    mix = real_mixes()
    base = mix["ort-no-kleidiai"]
    got = predict_pair(base, base, host, Target.of(host, 1.0))  # the same build twice: no gain
    assert got["prefill"]["gain"] == pytest.approx(0)
    assert got["prefill"]["tokens_per_s"]["baseline"] > 0
    with pytest.raises(ConfigError, match="no `streaming` cycles for `sme_outer_product`"):
        predict_pair(base, mix["ort-default"], host, Target.of(host, 1.0))


def test_an_interval_is_the_central_80_percent_of_the_sampled_gains_and_the_model_error():
    """With every constant fixed, the interval is the model error's alone: its central 80 %
    in log speedup is 1.2816 standard deviations each side; with the ranges drawn and no model
    error it leaves out the most extreme draws; a larger model error widens it; the same
    inputs give the same interval."""
    model, got = x300(), real_mixes()
    base, treat = got["ort-no-kleidiai"], got["ort-default"]
    target = Target.of(model, weights(model.phone_shape) / weights(SHAPES["tiny"]))
    fixed = dataclasses.replace(
        model,
        constants={
            k: type(c)(c.name, c.value, c.value, c.value, c.source)
            for k, c in model.constants.items()
        },
        model_error=0.25,
    )
    p = predict_pair(base, treat, fixed, target)["prefill"]
    spread = math.log1p(p["high"]) - math.log1p(p["low"])
    assert spread == pytest.approx(2 * 1.2816 * 0.25, rel=0.06)
    assert math.log1p(p["gain"]) == pytest.approx(
        (math.log1p(p["high"]) + math.log1p(p["low"])) / 2, abs=0.03
    )
    exact = dataclasses.replace(model, model_error=0.0)
    drawn = [
        (1 + gain_at(base, treat, v, target, exact)) for v in exact.samples()
    ]  # every draw's speedup
    q = predict_pair(base, treat, exact, target)["prefill"]
    assert min(drawn) < 1 + q["low"] and 1 + q["high"] < max(drawn)
    wider = predict_pair(base, treat, dataclasses.replace(model, model_error=0.5), target)
    assert wider["prefill"]["low"] < q["low"] and wider["prefill"]["high"] > q["high"]
    assert predict_pair(base, treat, exact, target)["prefill"] == q


def gain_at(base, treat, v, target, model):
    from mnnrepro.analysis.prediction import gain

    return gain(base, treat, "prefill", v, target, model)


def test_decode_reads_its_weights_and_kv_cache_at_one_cores_bandwidth_on_one_thread(tmp_path):
    model = x300()
    shape, v = model.phone_shape, model.values()
    # Qwen3-VL-4B: K and V of 36 layers x 8 KV heads x 128, for the prompt and half the decode
    assert kv_values(shape, 512, 64) == 2 * 36 * 8 * 128 * (512 + 32)
    target = Target.of(model, 1.0, 512, 64)
    read = target.weights * v["bytes_per_weight"] + target.kv_values * v["kv_bytes_per_value"]
    one = memory_seconds(v, target, 1)
    assert one == pytest.approx(read / (v["core_bandwidth_gb_s"] * 1e9))
    assert memory_seconds(v, target, 8) == pytest.approx(read / (v["memory_bandwidth_gb_s"] * 1e9))
    assert memory_seconds(v, Target.of(model, 1.0, 4096, 64), 1) > one  # a longer context
    data = yaml.safe_load(COSTS.read_text())
    del data["socs"]["dimensity-9500"]["core_bandwidth_gb_s"]
    del data["model_error"]
    broken = tmp_path / "costs.yaml"
    broken.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"`socs.dimensity-9500.core_bandwidth_gb_s` needs a"):
        CostModel.read(broken, "c1-ultra", "dimensity-9500", "qwen3-vl-4b")
    data["socs"]["dimensity-9500"]["core_bandwidth_gb_s"] = {"value": 30, "source": "a test"}
    broken.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"`model_error.log_sd` needs a value >= 0 and a sou"):
        CostModel.read(broken, "c1-ultra", "dimensity-9500", "qwen3-vl-4b")


def test_a_prediction_priced_per_instruction_needs_a_qemu_device_and_the_cores_llvm_mca():
    """`prediction.pricing: per_instruction` prices QEMU's arm64 encodings through the core's
    llvm-mca model: a callgrind device, or a core the cost model gives no `llvm_mca`, is one
    line naming the key; by_class asks neither."""
    config = yaml.safe_load((ROOT / "config" / "predict-x300.yaml").read_text())
    config["mnn"] = {"source": {"path": "."}}
    config["prediction"]["pricing"] = "per_instruction"
    assert prediction_problems(config) == []
    x300 = dict(config["prediction"])
    # this host's core (config/predict-host.yaml's): no llvm_mca options
    config["prediction"].update(core="epyc-zen4", soc="reference-host", model="qwen3-0.6b")
    (problem,) = prediction_problems(config)
    needs = "cores.epyc-zen4 needs `llvm_mca` (mcpu, mattr, streaming_mattr) and `dispatch_width`"
    assert problem.startswith("config key `prediction.constants`: ") and needs in problem
    config["prediction"] = x300
    config["devices"]["host"] = {"local": {"profiler": "callgrind"}}
    config["prediction"]["device"] = "host"
    config["attribution"]["devices"] = [*config["attribution"].get("devices", []), "host"]
    assert prediction_problems(config) == [
        "config key `prediction.pricing`: per_instruction prices the arm64 encodings QEMU "
        "counts; 'host' is not a QEMU device (by_class prices its classes)"
    ]
    config["prediction"]["pricing"] = "by_class"
    assert prediction_problems(config) == []
