"""The third stack on the emulated CPUs: ONNX Runtime GenAI from its pinned linux-arm64 PyPI
wheels (the real download), the synthetic checkpoint converted by genai's own model builder,
its KleidiAI switch (session option `mlas.disable_kleidiai`) as a pair on QEMU without SME and
with SME2 at 512 bits: the gate, the benchmark rows, what ran and the phone's gain predicted
from it. The pairs on this host (x86-64: equality checks, through genai's Python and C APIs)
run in the control experiment, tests/workflow/test_control.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import (
    assert_no_sme2_kernel_ran_without_sme,
    debian_archive_reachable,
    network_marks,
    run_snakemake,
)

pytestmark = network_marks(PyPI="the wheels")

ORT = "tests/workflow/config-ort.yaml"
SWITCH = "mlas.disable_kleidiai"
# the int4 GEMM KleidiAI runs a prefill's MatMulNBits with on an SME2 CPU (outer products),
# and the GEMV of a decode step (dot products): found here in the emulated profiles
PREFILL_KERNEL = "kai_kernel_matmul_clamp_f32_qai8dxp1vlx4_qsi4c32p4vlx4_1vlx4vl_sme2_mopa"
DECODE_KERNEL = "kai_kernel_matmul_clamp_f32_qai8dxp1x4_qsi4c32p4vlx4_1x4vl_sme2_dot"


@pytest.mark.skipif(
    not debian_archive_reachable(), reason="needs Debian's archive: the emulated userland"
)
def test_the_ort_pair_on_emulated_cpus_runs_sme2_kernels_only_with_kleidiai_on(
    root, seed_models, tmp_path
):
    cfg = yaml.safe_load((root / "config/emulated-sme2.yaml").read_text())
    cfg["experiment"] = "ort-emulated"
    cfg["engines"] = {"ort": {"ort_genai": {"platform": "linux-arm64"}}}
    cfg["models"] = {"synth-tiny": cfg["models"]["synth-tiny"]}
    cfg["devices"] = {name: cfg["devices"][name] for name in ("qemu-no-sme", "qemu-sme2-vl512")}
    variants = yaml.safe_load((root / ORT).read_text())["variants"]
    cfg["variants"] = {n: v for n, v in variants.items() if v["engine"] == "ort"}
    cfg["comparison"] = {
        "baseline": "ort-no-kleidiai",
        "treatment": "ort-default",
        "on_non_sme2_device": "fallback-check",
    }
    # the phone's gain predicted from this CPU's instruction counts (analysis/prediction.py)
    cfg["prediction"] = {
        "device": "qemu-sme2-vl512",
        "core": "c1-ultra",
        "soc": "dimensity-9500",
        "model": "qwen3-vl-4b",
    }
    cfg["correctness"].update(prompts=["你好"], max_new_tokens=4)
    # what ran is profiled on the SME2 CPU alone: on the CPU without SME an SME instruction
    # kills the process (asserted below), so its completed gate and rows show that no SME2
    # kernel ran there; its profiles (QEMU runs logging every block) would say it again
    cfg["attribution"]["devices"] = ["qemu-sme2-vl512"]
    # emulated timings are recorded, never judged: no warm-up invocation, and short phases
    # (every profiled invocation logs each block QEMU executes: its length is the test's)
    cfg["bench"].update(
        quiet_timeout_s=0, quiet_window_s=0.1, warmup=0, prompt_tokens=16, generate_tokens=4
    )
    config_path = tmp_path / "ort-emulated.yaml"
    config_path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    seed_models(tmp_path, cfg["models"], checkpoint=True)
    run_snakemake(
        root, "--cores", "2", "--configfile", str(config_path), "--directory", str(tmp_path)
    )
    out = tmp_path / "results" / "ort-emulated"

    (record,) = [
        json.loads(p.read_text()) for p in tmp_path.glob("results/engines/ort-*/wheels.json")
    ]
    assert record["target_arch"] == "aarch64" and len(record["library"]["sme2_kernels"]) == 11
    assert SWITCH in record["library"]["session_options"]
    # each invocation names the versions it ran: the staged wheels' (read beside genai's)
    raws = [json.loads(p.read_text()) for p in out.glob("raw/*/*/*/rep-*.json")]
    ran_versions = {
        (r["engine"]["onnxruntime_version"], r["engine"]["onnxruntime_genai_version"]) for r in raws
    }
    assert ran_versions == {
        tuple(record["versions"][p] for p in ("onnxruntime", "onnxruntime_genai"))
    }
    modes = json.loads((out / "modes/qemu-sme2-vl512.json").read_text())["modes"]
    assert [m["mode"] for m in modes] == ["claim"]
    bench = pd.read_csv(out / "bench.csv")
    assert set(bench["device"]) == {"qemu-no-sme", "qemu-sme2-vl512"}  # recorded, never judged
    for device in ("qemu-no-sme", "qemu-sme2-vl512"):
        validity = json.loads((out / f"validity/{device}/synth-tiny.json").read_text())
        failed = [c["name"] for c in validity["checks"] if not c["passed"]]
        assert failed == [], (device, failed)
    # the CPU without SME ran both variants to the end (gate and rows), where an SME
    # instruction kills the process: no SME2 kernel ran there, whatever the library chose
    assert_no_sme2_kernel_ran_without_sme(tmp_path, cfg, bench)
    # what ran: KleidiAI's SME2 kernels, named from the stripped library's kernel tables, in
    # prefill (the outer-product GEMM) and decode (the dot-product GEMV) with KleidiAI on, on
    # the SME2 CPU; none with the switch set
    kernels = pd.read_csv(out / "kernels.csv", keep_default_na=False)
    assert set(kernels["device"]) == {"qemu-sme2-vl512"}  # attribution.devices
    sme2 = kernels[kernels["sme2_kernel"] & (kernels["count"] > 0)]
    ran = sme2.groupby(["device", "variant", "phase"])["symbol"].agg(set)
    assert set(ran.index) == {
        ("qemu-sme2-vl512", "ort-default", "prefill"),
        ("qemu-sme2-vl512", "ort-default", "decode"),
        # the start-up (a 1-token prompt, 1 token) the prediction subtracts, and a prefill of
        # half the prompt, which tells a prefill's work per token from what it does once: the
        # prediction's device only
        ("qemu-sme2-vl512", "ort-default", "startup"),
        ("qemu-sme2-vl512", "ort-default", "prefill_short"),
    }
    assert PREFILL_KERNEL in ran[("qemu-sme2-vl512", "ort-default", "prefill")]
    assert DECODE_KERNEL in ran[("qemu-sme2-vl512", "ort-default", "decode")]
    # the instructions that ran, by class: SME outer products in KleidiAI's SME2 kernels with
    # KleidiAI on, on the SME2 CPU, and none in any other run; every executed block's
    # translation was logged, so each instruction counted is one that ran
    engine_code = kernels[kernels["engine_library"]]
    assert (engine_code["unlogged_blocks"] == 0).all()
    assert (engine_code["instructions"] >= engine_code["count"]).all()
    outer = engine_code[engine_code["ins_sme_outer_product"] > 0]
    assert set(zip(outer["device"], outer["variant"], outer["phase"], strict=True)) == {
        ("qemu-sme2-vl512", "ort-default", "prefill"),
        ("qemu-sme2-vl512", "ort-default", "prefill_short"),
    }
    assert outer["sme2_kernel"].all() and PREFILL_KERNEL in set(outer["symbol"])
    # the stripped library's blocks resolve to functions (unwind entries, the kernel tables)
    # but for a few in code that has neither (hand-written helpers): 0.3 % of the phases'
    # blocks here (each phase profiled alone, without the session's start: runs/profile.py)
    unresolved = engine_code[engine_code["symbol"] == ""]["count"].sum()
    assert unresolved / engine_code["count"].sum() < 0.01
    # the phone's gain predicted from these counts: the SME2 kernels' outer products are
    # what prefill adds per token with KleidiAI on, and none without; both phases predicted
    prediction = json.loads((out / "prediction.json").read_text())
    (predicted,) = prediction["predictions"]
    per_token = predicted["mix_per_token"]
    assert per_token["treatment"]["prefill"]["streaming"]["sme_outer_product"] > 0
    assert sum(per_token["baseline"]["prefill"]["streaming"].values()) == 0
    # a prefill's work per token and what it does once (told apart by the short prefill's
    # profile) add up to the profiled prefill's: its outer products, none in the start-up
    mix = per_token["treatment"]
    prompt = prediction["profiled_bench"]["prompt_tokens"]
    counted = engine_code[
        (engine_code["device"] == "qemu-sme2-vl512")
        & (engine_code["variant"] == "ort-default")
        & (engine_code["phase"] == "prefill")
    ]["ins_sme_outer_product"].sum()
    split = mix["prefill"]["streaming"]["sme_outer_product"] * (prompt - 1)
    assert split == pytest.approx(counted) and "prefill_once" in mix
    for phase in ("prefill", "decode"):
        got = predicted["phases"][phase]
        assert got["low"] <= got["gain"] <= got["high"] and got["sensitivity"]
    assert "## Predicted before the phone" in (out / "summary.md").read_text()
    # the engine's process is told of SME2 on the SME2 CPU only (what cpuinfo reads)
    for device, said in (("qemu-sme2-vl512", "sme:1, sme2:1"), ("qemu-no-sme", "sme:0, sme2:0")):
        greedy = json.loads((out / f"greedy/{device}/synth-tiny.json").read_text())
        assert greedy["ort-default"]["engine"]["device_supports"].endswith(said), device
