"""The third stack end to end: ONNX Runtime GenAI from its pinned PyPI wheels (the real
download), the synthetic checkpoint converted by genai's own model builder, its KleidiAI switch
(session option `mlas.disable_kleidiai`) as a pair: on this host (x86-64, whose wheel has no
KleidiAI: an equality check; once through genai's Python API, once through its C API as a
phone without Python runs it), and on the emulated CPUs (QEMU without SME, and SME2 at 512
bits: the gate, the benchmark rows and what ran). Bad input gets one line naming its key."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import (
    copy_repository,
    debian_archive_reachable,
    pypi_reachable,
    run_snakemake,
    streaming_mode_faults,
)

from mnnrepro.models.onnx_genai import ConversionError, convert
from mnnrepro.models.synthetic import make_model

pytestmark = [
    pytest.mark.slow,
    pytest.mark.network,
    pytest.mark.skipif(not pypi_reachable(), reason="needs the network (PyPI: the wheels)"),
]

ORT = "tests/workflow/config-ort.yaml"
SWITCH = "mlas.disable_kleidiai"
# the int4 GEMM KleidiAI runs a prefill's MatMulNBits with on an SME2 CPU (outer products),
# and the GEMV of a decode step (dot products): found here in the emulated profiles
PREFILL_KERNEL = "kai_kernel_matmul_clamp_f32_qai8dxp1vlx4_qsi4c32p4vlx4_1vlx4vl_sme2_mopa"
DECODE_KERNEL = "kai_kernel_matmul_clamp_f32_qai8dxp1x4_qsi4c32p4vlx4_1x4vl_sme2_dot"


C_API = ("ort-c-no-kleidiai", "ort-c-default")  # the same pair through ort_genai_tool
# 4 greedy tokens after a prompt, through genai's Python API (the model directory: argv[1])
GREEDY = """
import json, sys, onnxruntime_genai as og
model = og.Model(sys.argv[1])
params = og.GeneratorParams(model)
params.set_search_options(max_length=9, do_sample=False)
generator = og.Generator(model, params)
generator.append_tokens([5, 17, 300, 2, 99])
tokens = []
while not generator.is_done():
    generator.generate_next_token()
    tokens.append(int(generator.get_next_tokens()[0]))
print(json.dumps(tokens))
"""


def assert_c_api_answers_as_python(repo, out) -> None:
    """genai's C API tool (runner: c-api, built here against the wheel's library) answers the
    gate as the Python runner does on the same model and session options: the same prompt
    tokens, the same token ids, and every step's top-k logits equal as float32 (the tool
    prints 9 significant digits: a float32's exact value)."""
    import numpy as np

    (tool,) = [json.loads(p.read_text()) for p in repo.glob("results/engines/*/gate-tool.json")]
    assert tool["engine"] == "ort-c" and tool["linked"] == ["libonnxruntime-genai.so"]
    greedy = json.loads((out / "greedy/host/synth-tiny.json").read_text())
    for python, c_api in zip(("ort-no-kleidiai", "ort-default"), C_API, strict=True):
        ours_said, theirs_said = greedy[c_api]["engine"], greedy[python]["engine"]
        assert ours_said["tool"] == "ort_genai_tool"
        assert ours_said["device_supports"] == theirs_said["device_supports"]
        for ours, theirs in zip(greedy[c_api]["answers"], greedy[python]["answers"], strict=True):
            assert ours["prompt_tokens"] == theirs["prompt_tokens"]
            assert ours["tokens"] == theirs["tokens"]
            for step, reference in zip(ours["steps"], theirs["steps"], strict=True):
                top, expected = np.array(step["top"]), np.array(reference["top"])
                assert (top[:, 0] == expected[:, 0]).all()
                assert (top[:, 1].astype(np.float32) == expected[:, 1].astype(np.float32)).all()


def test_the_ort_pair_runs_on_this_host_as_an_equality_check(root, seed_models, tmp_path):
    repo = copy_repository(root, tmp_path / "repo")
    seed_models(repo, yaml.safe_load((repo / ORT).read_text())["models"], checkpoint=True)
    run_snakemake(repo, "--cores", "2", "--configfile", ORT)
    out = repo / "results" / "ort"

    found = {
        json.loads(p.read_text())["engine"]: p for p in repo.glob("results/engines/*/wheels.json")
    }
    records = {engine: json.loads(path.read_text()) for engine, path in found.items()}
    assert {e: r["runner"] for e, r in records.items()} == {"ort": "python", "ort-c": "c-api"}
    record = records["ort"]
    assert record["kind"] == "ort-genai" and record["target_arch"] == "x86_64"
    assert record["versions"] == {"onnxruntime": "1.32.0", "onnxruntime_genai": "0.18.0"}
    assert record["library"]["kleidiai_kernels"] == []  # the x86-64 wheel has no KleidiAI
    assert "session.intra_op.allow_spinning" in record["library"]["session_options"]
    model = json.loads((repo / "results/models/synth-tiny/onnx.json").read_text())
    assert {"genai_config.json", "model.onnx", "model.onnx.data"} <= {
        f["path"] for f in model["files"]
    }
    assert model["layout"]["matmul_nbits"] > 0  # int4, as genai's builder writes for the CPU

    bench = pd.read_csv(out / "bench.csv")
    assert set(bench["variant"]) == {"ort-no-kleidiai", "ort-default", *C_API}
    assert (bench.groupby(["variant", "phase"]).size() == 2).all()  # 2 repetitions each
    for baseline in ("ort-no-kleidiai", "ort-c-no-kleidiai"):
        switched = bench[bench["variant"] == baseline]["session_options"].unique()
        assert [json.loads(s) for s in switched] == [{SWITCH: "1"}]
    modes = json.loads((out / "modes/host.json").read_text())["modes"]
    assert [m["mode"] for m in modes] == ["equal", "equal"]  # no SME2 in the x86-64 wheel
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["expectation"]) == {"no difference"}
    validity = json.loads((out / "validity/host/synth-tiny.json").read_text())
    assert [c["name"] for c in validity["checks"] if not c["passed"]] == []
    checks = {c["name"]: c for c in validity["checks"]}
    assert_c_api_answers_as_python(repo, out)
    gate = checks["correctness gate (teacher-forced token ids, ort-default vs ort-no-kleidiai)"]
    assert gate["passed"]  # the same code with the switch on or off: identical answers
    assert all(p["kind"] == "identical" for p in gate["details"]["prompts"])
    switch = checks["SME kernels switched off in ort-no-kleidiai only (same binary as ort-default)"]
    assert switch["passed"] and switch["details"]["env"] == {
        "ort-no-kleidiai": "1",
        "ort-default": None,
    }

    # a checkpoint genai's builder cannot convert (an architecture it does not map): one line
    # naming the model, with the builder's own last words
    site = found["ort"].parent / "bin"
    make_model("tiny", 0, tmp_path / "unmapped")
    checkpoint_config = tmp_path / "unmapped/config.json"
    spec = json.loads(checkpoint_config.read_text())
    checkpoint_config.write_text(json.dumps({**spec, "architectures": ["NoSuchForCausalLM"]}))
    with (tmp_path / "convert.log").open("w") as log, pytest.raises(ConversionError) as err:
        convert("unmapped", tmp_path / "unmapped", site, tmp_path / "onnx", tmp_path / "c", log)
    assert str(err.value).startswith("model unmapped: genai's model builder could not convert")
    assert "\n" not in str(err.value) and not (tmp_path / "onnx").exists()

    # a vision-language checkpoint (the paper's Qwen3-VL): its language model is converted, a
    # decoder of token ids that genai runs text-only, as every engine here runs the model
    make_model("tiny-vl", 0, tmp_path / "vl")
    with (tmp_path / "convert-vl.log").open("w") as log:
        record = convert("vl", tmp_path / "vl", site, tmp_path / "vl-onnx", tmp_path / "vc", log)
    assert record["language_model"]["as"] == "Qwen3ForCausalLM"
    assert not (tmp_path / "vc/language-model").exists()  # the text checkpoint is not kept
    genai = json.loads((tmp_path / "vl-onnx/genai_config.json").read_text())["model"]
    assert genai["type"] == "qwen3" and "input_ids" in genai["decoder"]["inputs"]
    ran = subprocess.run(
        [sys.executable, "-c", GREEDY, str(tmp_path / "vl-onnx")],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0 and len(json.loads(ran.stdout)) == 4, ran.stderr[-500:]

    # a session option the library does not hold (a typo: ONNX Runtime would ignore it) is
    # refused before any run, one line naming the key
    config = yaml.safe_load((repo / ORT).read_text())
    config["variants"]["ort-default"]["runtime"]["session_options"] = {"mlas.disable_kleidai": "1"}
    (repo / "typo.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(repo, "--cores", "2", "--configfile", "typo.yaml", check=False)
    assert proc.returncode != 0
    (line,) = [
        ln for ln in (proc.stdout + proc.stderr).splitlines() if "mlas.disable_kleidai`" in ln
    ]
    assert "config key `variants.ort-default.runtime.session_options.mlas.disable_kleidai`" in line
    assert "holds no such session option" in line


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
    # kernel ran there; its profiles (5 QEMU runs logging every block) would say it again
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
    userland = tmp_path / "resources/emulation/userland.json"
    assert streaming_mode_faults(userland, cfg["devices"]["qemu-no-sme"]["qemu"]["cpu"])
    assert not streaming_mode_faults(userland, cfg["devices"]["qemu-sme2-vl512"]["qemu"]["cpu"])
    rows = bench[bench["device"] == "qemu-no-sme"].groupby(["variant", "phase"]).size()
    assert set(rows.index) == {(v, p) for v in cfg["variants"] for p in ("prefill", "decode")}
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
    # but for a few in code that has neither (hand-written helpers): 0.03 % here
    unresolved = engine_code[engine_code["symbol"] == ""]["count"].sum()
    assert unresolved / engine_code["count"].sum() < 0.001
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
        (engine_code["device"] == "qemu-sme2-vl512") & (engine_code["variant"] == "ort-default")
        & (engine_code["phase"] == "prefill")
    ]["ins_sme_outer_product"].sum()  # fmt: skip
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
