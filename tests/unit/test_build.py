"""The build rule's logic on a small CMake project standing in for MNN (tests/data/fake-mnn)."""

from __future__ import annotations

import io
import shutil

import pytest

from mnnrepro.build import BuildError, build_engine, unused_flags

FAKE = {"kind": "path", "commit": "0" * 40, "dirty": False}
LLM = {"MNN_BUILD_LLM": True, "MNN_LOW_MEMORY": True, "MNN_SUPPORT_TRANSFORMER_FUSE": True}


@pytest.fixture
def source(root, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(root / "tests" / "data" / "fake-mnn", src)
    return {**FAKE, "path": str(src)}


def build(source, tmp_path, name, flags, expect=None):
    spec = {"platform": "host", "flags": flags, "expect": expect or {}}
    return build_engine(
        name,
        source,
        spec,
        str(tmp_path / f"build-{name}"),
        str(tmp_path / "engines" / name),
        io.StringIO(),
    )


def test_flags_reach_cmake_cache_and_artifacts_are_described(source, tmp_path):
    info = build(source, tmp_path, "sme2-off", {**LLM, "MNN_SME2": False}, {"sme2_kernels": False})
    assert info["cmake_cache"]["MNN_SME2"] == "OFF"
    assert info["cmake_cache"]["MNN_LOW_MEMORY"] == "ON"
    names = {f["path"] for f in info["files"]}
    assert {"llm_bench", "llm_demo", "libMNN.so", "libllm.so"} <= names
    assert all(len(f["sha256"]) == 64 for f in info["files"])
    assert "-DMNN_SME2=OFF" in info["cmake_command"]
    assert info["compiler"]["version"]
    assert info["sme2"]["sme2_symbol_count"] == 0


def test_sme2_on_has_the_kernels_and_the_check_holds(source, tmp_path):
    info = build(source, tmp_path, "sme2-on", {**LLM, "MNN_SME2": True}, {"sme2_kernels": True})
    assert "MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16" in info["sme2"]["sme2_symbols"]


def test_kernel_check_fails_when_the_expectation_is_wrong(source, tmp_path):
    with pytest.raises(BuildError, match=r"`engines.liar.build.expect.sme2_kernels` is False"):
        build(source, tmp_path, "liar", {**LLM, "MNN_SME2": True}, {"sme2_kernels": False})


def test_unused_flag_fails_naming_it(source, tmp_path):
    with pytest.raises(BuildError, match=r"did not use \['MNN_CPU_WEIGHT_DEQUANT_GEMM'\]"):
        build(source, tmp_path, "seed", {**LLM, "MNN_CPU_WEIGHT_DEQUANT_GEMM": True})


def test_kleidiai_silent_fallback_fails(source, tmp_path):
    with pytest.raises(BuildError, match="KleidiAI"):
        build(source, tmp_path, "kai", {**LLM, "MNN_KLEIDIAI": True})


def test_platform_arguments():
    from mnnrepro.build import platform_args

    android = platform_args("android-arm64", "/ndk")
    assert "-DCMAKE_TOOLCHAIN_FILE=/ndk/build/cmake/android.toolchain.cmake" in android
    assert "-DANDROID_ABI=arm64-v8a" in android and "-DANDROID_PLATFORM=android-21" in android
    assert "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-z,max-page-size=16384" in android
    assert "-DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++" in platform_args("linux-arm64")
    assert platform_args("host") == []
    with pytest.raises(BuildError, match="needs the NDK"):
        platform_args("android-arm64")


def test_unused_flags_parser_reads_cmake_warning():
    text = (
        "CMake Warning:\n  Manually-specified variables were not used by the project:\n\n"
        "    MNN_CPU_WEIGHT_DEQUANT_GEMM\n    LLM_SUPPORT_VISION\n\n\n-- Build files"
    )
    assert unused_flags(text) == ["MNN_CPU_WEIGHT_DEQUANT_GEMM", "LLM_SUPPORT_VISION"]
