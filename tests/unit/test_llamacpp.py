"""The llama.cpp kind (the control engine): its llama-bench parser on real captures, its source
pin, its GGUF converter's pre-tokenizer registration, its config checks and its validity checks.
The build and the runs themselves are exercised for real by tests/workflow/test_control.py."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from conftest import full_bench, full_variants, llama_record, pair_mode

from mnnrepro.analysis.validity import switch_checks
from mnnrepro.config import ConfigError
from mnnrepro.engines.llamacpp.build import changelog_names
from mnnrepro.engines.llamacpp.gguf_convert_main import declared_pre_tokenizer, update_script_text
from mnnrepro.engines.llamacpp.kind import (
    LlamaBenchParseError,
    LlamaCppEngine,
    kleidiai_lines,
    parse_output,
    sme_selected,
)
from mnnrepro.engines.registry import EngineRecord, kind_of_record, kind_of_spec
from mnnrepro.plan.checks import check
from mnnrepro.toolchain.records import engine_key


@pytest.fixture
def captures(root):
    return root / "tests" / "data" / "llama_bench"


@pytest.mark.parametrize("name", ["host-x86-p64-n16-d0-64.json", "qemu-sme512-p64-n16-d0-64.json"])
def test_llama_bench_json_gives_prefill_at_depth_0_and_decode_after_the_prompt(captures, name):
    text = (captures / name).read_text()
    tests = json.loads(text)
    parsed = parse_output(text, 64, 16)
    prefill, decode = parsed["results"]
    # what the file says: the test with n_prompt=64 at depth 0, and n_gen=16 at depth 64
    want = {(t["n_prompt"], t["n_gen"], t["n_depth"]): t["samples_ns"][0] for t in tests}
    assert (prefill["phase"], prefill["tokens"], prefill["context_start"]) == ("prefill", 64, 0)
    assert prefill["seconds"] == want[(64, 0, 0)] / 1e9
    assert (decode["phase"], decode["tokens"], decode["context_start"]) == ("decode", 16, 64)
    assert decode["seconds"] == want[(0, 16, 64)] / 1e9
    assert decode["tps"] == pytest.approx(16 / decode["seconds"])
    assert parsed["ran"]["build_commit"] == "0c1e57098" and parsed["ran"]["n_threads"] == 2
    assert len(parsed["tests"]) == 4  # the two unused combinations are kept in the record


def test_llama_bench_output_without_the_asked_test_is_refused_naming_it(captures):
    text = (captures / "host-x86-p64-n16-d0-64.json").read_text()
    with pytest.raises(LlamaBenchParseError, match="0 decode tests with n_prompt=0, n_gen=32"):
        parse_output(text, 64, 32)
    tests = json.loads(text)
    tests[0]["samples_ns"] = [1, 2]  # two samples: not one invocation's one measurement
    with pytest.raises(LlamaBenchParseError, match=r"prefill test: samples_ns \[1, 2\]"):
        parse_output(json.dumps(tests), 64, 16)
    with pytest.raises(LlamaBenchParseError, match="no readable JSON"):
        parse_output(text[: len(text) // 2], 64, 16)
    with pytest.raises(LlamaBenchParseError, match="no test results"):
        parse_output("main: error: failed to load model\n", 64, 16)


def test_kleidiai_says_whether_it_chose_sme(captures):
    chose = kleidiai_lines((captures / "qemu-sme512-verbose-kleidiai.txt").read_text())
    off = kleidiai_lines((captures / "qemu-sme512-sme0-verbose-kleidiai.txt").read_text())
    assert sme_selected(chose) and not sme_selected(off)
    assert "kleidiai: primary q4 kernel feature SME2" in chose
    assert "kleidiai: SME disabled" in off


def test_the_bench_command_asks_for_what_the_parser_checks():
    engine = LlamaCppEngine(
        EngineRecord.of({"engine": "llama", "kind": "llamacpp"}), {"engines": {"llama": "/d/e"}}
    )
    argv, env = engine.bench_command(
        None,
        "/d/m/model.gguf",
        {"thread_num": 4},
        full_bench(prompt_tokens=512, generate_tokens=128),
        "o",
    )
    assert argv[0] == "/d/e/llama-bench" and env == {"LD_LIBRARY_PATH": "/d/e"}
    args = dict(zip(argv[1::2], argv[2::2], strict=True))
    assert args == {
        "-m": "/d/m/model.gguf",
        "-p": "512",
        "-n": "128",
        "-d": "0,512",
        "-t": "4",
        "-r": "1",
        "-o": "json",
    }
    assert engine.asked == (512, 128)


def test_the_sdist_pin_must_name_the_commit_its_changelog_names(tmp_path):
    (tmp_path / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [Unreleased]\n\n## [0.3.36]\n\n"
        "- feat: update llama.cpp to ggml-org/llama.cpp@0c1e57098\n\n"
        "## [0.3.35]\n\n- feat: update llama.cpp to ggml-org/llama.cpp@4df29be4f\n"
    )
    assert changelog_names(tmp_path, "0.3.36", "0c1e57098")
    assert changelog_names(tmp_path, "0.3.36", "0c1e570")  # a shorter prefix of it
    assert not changelog_names(tmp_path, "0.3.36", "4df29be4f")  # the previous release's
    assert not changelog_names(tmp_path, "0.3.37", "0c1e57098")  # no such release


def test_only_a_declared_gpt2_byte_level_pre_tokenizer_is_registered(tmp_path):
    def declared(pre):
        (tmp_path / "tokenizer.json").write_text(json.dumps({"pre_tokenizer": pre}))
        return declared_pre_tokenizer(tmp_path)

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    assert declared({**byte_level, "use_regex": True}) == "gpt-2"
    assert declared({**byte_level, "use_regex": False}) is None  # another split
    assert declared({"type": "Metaspace", "replacement": "▁"}) is None
    assert declared(None) is None
    (tmp_path / "convert_hf_to_gguf_update.py").write_text("import os\nCHK_TXT = 'a\\nb'\n")
    assert update_script_text(tmp_path) == "a\nb"


@pytest.fixture
def control_config(root):
    return yaml.safe_load((root / "tests" / "workflow" / "config-control.yaml").read_text())


def test_the_control_config_is_valid_and_its_mistakes_name_the_key(control_config):
    check(control_config)
    no_source = copy.deepcopy(control_config)
    del no_source["llamacpp"]
    with pytest.raises(
        ConfigError, match=r"config key `llamacpp\.source`: engines \['llama'\] are built"
    ):
        check(no_source)
    downloaded = copy.deepcopy(control_config)
    downloaded["models"]["synth-tiny"] = {"modelscope": {"id": "a/b", "revision": "c" * 40}}
    with pytest.raises(ConfigError, match=r"config key `models`: \['synth-tiny'\]"):
        check(downloaded)
    kleidiai = copy.deepcopy(control_config)
    kleidiai["engines"]["llama"]["llamacpp"]["flags"] = {"GGML_CPU_KLEIDIAI": True}
    with pytest.raises(ConfigError, match=r"config key `llamacpp\.kleidiai`"):
        check(kleidiai)


@pytest.mark.slow
def test_llama_engine_keys_follow_their_own_source_tree(control_config):
    spec = control_config["engines"]["llama"]
    compilers = LlamaCppEngine.compilers
    key = engine_key("llama", spec, "llamacpp", compilers, control_config["llamacpp"])
    other = copy.deepcopy(control_config)
    other["llamacpp"]["source"]["sdist"]["sha256"] = "0" * 64
    assert key != engine_key("llama", spec, "llamacpp", compilers, other["llamacpp"])
    assert kind_of_spec(spec) is LlamaCppEngine and kind_of_record({"kind": "llamacpp"}) is (
        LlamaCppEngine
    )


VARIANTS = {
    "off": {"engine": "llama", "env": {"GGML_KLEIDIAI_SME": "0"}},
    "on": {"engine": "llama", "env": {}},
}


def answers(sme_on: bool, sme_off: bool) -> dict:
    line = {True: "kleidiai: SME enabled", False: "kleidiai: SME disabled"}
    return {
        "off": {"engine": {"device_supports": line[sme_off], "kleidiai_sme": sme_off}},
        "on": {"engine": {"device_supports": line[sme_on], "kleidiai_sme": sme_on}},
    }


def passed(checks):
    return {c["name"].split(" (")[0]: c["passed"] for c in checks}


def test_the_switch_pair_passes_only_with_one_binary_the_switch_and_the_kernels():
    sme2 = {"sme2": True}
    good = switch_checks(
        answers(True, False),
        ("off", "on"),
        llama_record(),
        llama_record(),
        full_variants(VARIANTS),
        sme2,
    )
    assert all(c["passed"] for c in good) and len(good) == 3
    # the switch not set in the baseline: both variants would run the SME kernels
    unswitched = {**VARIANTS, "off": {"engine": "llama", "env": {}}}
    bad = switch_checks(
        answers(True, True),
        ("off", "on"),
        llama_record(),
        llama_record(),
        full_variants(unswitched),
        sme2,
    )
    assert [c["passed"] for c in bad] == [False, True, False]
    # an arm64 build without KleidiAI's SME kernels (GGML_CPU_KLEIDIAI off)
    none = switch_checks(
        answers(False, False),
        ("off", "on"),
        llama_record(count=0),
        llama_record(count=0),
        full_variants(VARIANTS),
        sme2,
    )
    assert [c["passed"] for c in none] == [True, False, False]
    # two different binaries are not the switch pair
    other = llama_record(engine="llama2")
    two = switch_checks(
        answers(True, False), ("off", "on"), other, llama_record(), full_variants(VARIANTS), sme2
    )
    assert not two[0]["passed"]


def test_on_x86_the_switch_pair_expects_no_kernels_and_no_run_time_choice():
    x86 = llama_record(arch="x86_64", count=0)
    checks = switch_checks(
        answers(False, False), ("off", "on"), x86, x86, full_variants(VARIANTS), {"sme2": False}
    )
    assert [c["passed"] for c in checks] == [True, True]  # no run-time check without SME2
    wrong = switch_checks(
        answers(False, False),
        ("off", "on"),
        llama_record(arch="x86_64"),
        llama_record(arch="x86_64"),
        full_variants(VARIANTS),
        {"sme2": False},
    )
    assert not wrong[1]["passed"]  # SME kernels in an x86 build: something else was built


def test_on_a_device_without_sme2_the_control_is_a_fallback_check_like_mnns_pair():

    no_sme2 = {"device": "old-phone", "sme2": False, "cpu_features": ["asimd", "i8mm"]}
    with pytest.raises(ValueError, match="treatment engine llama is built with SME2 kernels"):
        pair_mode(llama_record(), no_sme2, "fail")
    assert pair_mode(llama_record(), no_sme2, "fallback-check") == "fallback"
    assert pair_mode(llama_record(), {**no_sme2, "sme2": True}, "fail") == "claim"
    assert pair_mode(llama_record(arch="x86_64", count=0), no_sme2, "fail") == "equal"
    # an arm64 build without KleidiAI's SME kernels has nothing SME2 to compare
    assert pair_mode(llama_record(count=0), no_sme2, "fail") == "claim"


def sdist(tmp_path, version="0.3.36", commit="0c1e57098"):
    """A source distribution shaped like llama-cpp-python's: the vendored tree and CHANGELOG."""
    import hashlib
    import tarfile

    top = tmp_path / "made" / f"llama_cpp_python-{version}"
    (top / "vendor" / "llama.cpp").mkdir(parents=True)
    (top / "vendor" / "llama.cpp" / "CMakeLists.txt").write_text("project(llama)\n")
    (top / "CHANGELOG.md").write_text(
        f"## [{version}]\n\n- feat: update llama.cpp to ggml-org/llama.cpp@{commit}\n"
    )
    archive = tmp_path / "sdist.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    return {"version": version, "url": f"file://{archive}", "sha256": digest, "commit": commit}


def test_the_sdist_is_verified_unpacked_and_must_name_its_commit(tmp_path):
    from mnnrepro.engines.llamacpp.build import provide_source
    from mnnrepro.fetch import FetchError
    from mnnrepro.toolchain.source import SourceError

    pin = sdist(tmp_path)
    receipt = provide_source({"sdist": pin}, {}, tmp_path / "cache")
    assert receipt["path"].endswith("llama_cpp_python-0.3.36/vendor/llama.cpp")
    assert (receipt["kind"], receipt["commit"]) == ("sdist", "0c1e57098")
    assert receipt["cmake_flags"] == {"LLAMA_BUILD_COMMIT": "0c1e57098"}  # no KleidiAI pinned
    with pytest.raises(SourceError, match=r"`llamacpp\.source\.sdist\.commit`.*@4df29be4f"):
        provide_source({"sdist": {**pin, "commit": "4df29be4f"}}, {}, tmp_path / "cache")
    with pytest.raises(FetchError):
        provide_source({"sdist": {**pin, "sha256": "0" * 64}}, {}, tmp_path / "other")
    assert not (tmp_path / "other" / "sdist").exists()  # nothing unverified was unpacked


def test_a_local_checkout_is_used_in_place_with_its_commit(tmp_path):
    import subprocess

    from mnnrepro.engines.llamacpp.build import provide_source

    tree = tmp_path / "llama.cpp"
    tree.mkdir()
    (tree / "CMakeLists.txt").write_text("project(llama)\n")
    run = {"cwd": tree, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)
    subprocess.run(["git", "add", "-A"], **run)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"], **run
    )
    head = subprocess.run(["git", "rev-parse", "HEAD"], text=True, **run).stdout.strip()
    receipt = provide_source({"path": str(tree)}, {}, tmp_path / "cache")
    assert receipt["path"] == str(tree.resolve()) and receipt["commit"] == head[:9]
    assert receipt["cmake_flags"]["LLAMA_BUILD_COMMIT"] == head[:9]


def test_a_linux_arm64_build_without_clang_16_names_the_tool(monkeypatch):
    """Checked before CMake runs (it would fail later with a compiler-test error); which()
    is pointed at an empty PATH so that the tool is missing on any machine."""
    from mnnrepro.engines.llamacpp.build import cross_args
    from mnnrepro.toolchain import BuildError

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BuildError, match="needs `clang-16`, which is not installed"):
        cross_args("linux-arm64", None)
    assert cross_args("host", None) == []  # the host build needs no cross compiler


def test_a_host_engine_of_the_quantizers_flags_holds_the_quantizer():
    """One build of one tree and flags: the first used host engine whose flags are
    `llamacpp.quantizer.flags`; another platform or other flags leave the quantizer its own
    build."""
    from mnnrepro.engines.llamacpp.build import engine_programs, quantizer_engine

    flags = {"CMAKE_BUILD_TYPE": "None"}
    engines = {
        "phone": {"llamacpp": {"platform": "android-arm64", "flags": flags}},
        "release": {"llamacpp": {"platform": "host"}},
        "plain": {"llamacpp": {"platform": "host", "flags": flags}},
        "mnn": {"build": {"platform": "host"}},
    }
    assert quantizer_engine(engines, ["mnn", "phone", "release", "plain"], flags) == "plain"
    assert quantizer_engine(engines, ["phone", "release"], flags) is None
    assert "llama-quantize" in engine_programs({"platform": "host"})
    assert "llama-quantize" not in engine_programs({"platform": "android-arm64"})


@pytest.mark.slow
def test_the_quantizers_flags_give_it_its_own_directory_and_key_in_messages(tmp_path):
    """`llamacpp.quantizer.flags` (tests/workflow/config-control.yaml builds it unoptimized):
    another build of the quantizer in another directory; none, the directory it always had. A
    flag CMake does not use fails naming the key it came from (a small CMake project here)."""
    from mnnrepro.engines.llamacpp.build import build_engine, build_quantizer, quantizer_dir
    from mnnrepro.toolchain import BuildError
    from mnnrepro.toolchain.records import BuildJob, source_key

    tree = {"source": {"path": "/src/llama.cpp"}}  # the `llamacpp` section
    plain = quantizer_dir(tree, {})
    assert plain == f"results/tools/llama-quantize-{source_key(tree)}"
    flagged = quantizer_dir(tree, {"CMAKE_BUILD_TYPE": "None"})
    assert flagged.startswith(plain + "-") and flagged != plain
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(t C)\n")
    source = {"path": str(src), "cmake_flags": {}}
    unused = {"NOT_AN_OPTION": True}
    with (tmp_path / "log").open("w") as log:
        with pytest.raises(BuildError, match=r"config key `llamacpp\.quantizer\.flags`"):
            build_quantizer(source, str(tmp_path / "q"), str(tmp_path / "qo"), log, 1, unused)
        spec = {"platform": "host", "flags": unused}
        with pytest.raises(BuildError, match=r"config key `engines\.llama\.llamacpp\.flags`"):
            job = BuildJob("llama", source, spec, str(tmp_path / "e"), str(tmp_path / "eo"), log)
            build_engine(job)
