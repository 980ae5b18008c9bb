"""The control engines end to end: llama.cpp from the pinned sdist (the real PyPI download),
built for this host, the same synthetic checkpoint in GGUF Q4_0, llama-bench and llama_greedy,
and ONNX Runtime GenAI from its pinned wheels on genai's own conversion of it, beside the
prebuilt MNN engine, the three engines' pairs in one report; then the archive and its replay."""

from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest
import yaml
from conftest import copy_repository, pypi_reachable, run_snakemake, without_replay_section

pytestmark = [
    pytest.mark.slow,
    pytest.mark.network,
    pytest.mark.skipif(not pypi_reachable(), reason="needs the network (PyPI: the sdist)"),
]

CONTROL = "tests/workflow/config-control.yaml"
COMPILERS = ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER")


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


def test_the_control_engine_runs_beside_mnn_and_both_pairs_reach_one_report(
    root, seed_models, tmp_path
):
    repo = copy_repository(root, tmp_path / "repo")
    compiler = with_this_machines_compiler(repo)
    # the MNN export and the checkpoint the GGUF is converted from, made once per test run
    seed_models(repo, yaml.safe_load((repo / CONTROL).read_text())["models"], checkpoint=True)
    run_snakemake(repo, "--cores", "2", "--configfile", CONTROL)
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
    assert set(llama["variant"]) == {"llama-sme-off", "llama-default"}
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

    greedy = json.loads((out / "greedy" / "host" / "synth-tiny.json").read_text())
    forced = greedy["llama-default"]["teacher_forced"]["llama-sme-off"]
    assert [len(a["steps"]) for a in forced] == [len(a["tokens"]) for a in forced]
    assert greedy["llama-default"]["engine"]["device_supports"].startswith("system_info:")

    summary = pd.read_csv(out / "summary.csv")
    pairs = set(zip(summary["baseline"], summary["treatment"], strict=True))
    assert pairs == {
        ("one-thread", "two-threads"),
        ("llama-sme-off", "llama-default"),
        ("ort-no-kleidiai", "ort-default"),
    }
    controls = summary[summary["treatment"].isin(["llama-default", "ort-default"])]
    assert set(controls["expectation"]) == {"no difference"}  # no SME2 on x86
    validity = json.loads((out / "validity" / "host" / "synth-tiny.json").read_text())
    names = [
        c["name"] for c in validity["checks"] if c["pair"] == ["llama-sme-off", "llama-default"]
    ]
    assert any(n.startswith("SME kernels switched off in llama-sme-off") for n in names)
    assert all(c["passed"] for c in validity["checks"])
    report = (out / "summary.md").read_text()
    assert "## Gains side by side" in report
    # the three engines' pairs side by side, per phase
    assert (
        "| two-threads vs one-thread | llama-default vs llama-sme-off "
        "| ort-default vs ort-no-kleidiai |" in report
    )
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
