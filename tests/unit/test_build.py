"""The build rule's logic on a small CMake project standing in for MNN (tests/data/fake-mnn)."""

from __future__ import annotations

import io
import re
import shutil

import pytest

from mnnrepro.engines.mnn_source.build import build_engine
from mnnrepro.toolchain.cmake import BuildError, unused_flags
from mnnrepro.toolchain.kernels import SME_INSTRUCTIONS, SYMBOL_LABEL, scan_disassembly
from mnnrepro.toolchain.records import BuildJob, flag_on

FAKE = {"kind": "path", "commit": "0" * 40, "dirty": False}
LLM = {"MNN_BUILD_LLM": True, "MNN_LOW_MEMORY": True, "MNN_SUPPORT_TRANSFORMER_FUSE": True}


@pytest.fixture
def source(root, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(root / "tests" / "data" / "fake-mnn", src)
    return {**FAKE, "path": str(src)}


CROSS = shutil.which("aarch64-linux-gnu-gcc") and shutil.which("aarch64-linux-gnu-objdump")
needs_cross = pytest.mark.skipif(
    not CROSS, reason="Debian's aarch64 cross compiler (installed by .ci/run) is missing"
)


def build(source, tmp_path, name, flags, expect=None, platform="host"):
    spec = {"platform": platform, "flags": flags, "expect": expect or {}}
    return build_engine(
        BuildJob(
            name,
            source,
            spec,
            str(tmp_path / f"build-{name}"),
            str(tmp_path / "engines" / name),
            io.StringIO(),
        )
    )


@pytest.mark.slow
def test_flags_reach_cmake_cache_and_artifacts_are_described(source, tmp_path):
    info = build(source, tmp_path, "sme2-off", {**LLM, "MNN_SME2": False}, {"sme2_kernels": False})
    assert info["cmake_cache"]["MNN_SME2"] == "OFF"
    assert info["cmake_cache"]["MNN_LOW_MEMORY"] == "ON"
    assert info["cmake_cache"]["CMAKE_BUILD_TYPE"] == "Release"  # as CMake kept it
    names = {f["path"] for f in info["files"]}
    assert {"llm_bench", "llm_demo", "libMNN.so", "libllm.so"} <= names
    assert all(len(f["sha256"]) == 64 for f in info["files"])
    assert "-DMNN_SME2=OFF" in info["cmake_command"]
    assert info["compiler"]["version"]
    assert info["sme2"]["sme2_kernel_count"] == 0


@pytest.mark.slow
def test_a_host_build_for_x86_can_have_no_sme2_kernel(source, tmp_path):
    """MNN_SME2=ON on x86 builds the SME2-named sources, but no SME instruction can exist."""
    import platform

    from mnnrepro.toolchain.kernels import can_have_sme2

    info = build(source, tmp_path, "sme2-on", {**LLM, "MNN_SME2": True})
    assert info["target_arch"] == platform.machine()
    if platform.machine() == "x86_64":
        assert not can_have_sme2(info)
        assert info["sme2"]["sme2_kernel_count"] == 0
        assert "MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16" in info["sme2"]["sme2_named_without_sme"]


@pytest.mark.slow
@needs_cross
def test_sme2_kernels_are_sme2_named_functions_that_execute_sme_instructions(source, tmp_path):
    """A real linux-arm64 cross build, disassembled: ON has the kernels; OFF has none, although
    it has a NEON helper named for SME2, as MNN 3.6.1 does."""
    on = build(
        source, tmp_path, "on", {**LLM, "MNN_SME2": True}, {"sme2_kernels": True}, "linux-arm64"
    )
    assert on["target_arch"] == "aarch64"
    assert on["sme2"]["sme2_kernels"] == [
        "MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16",
        "MNNPackedMatMulRemainFP16_SME2",
    ]
    assert on["sme2"]["sme_instruction_sites"] == 6  # smstart + smstop in each, KleidiAI's too
    off = build(
        source, tmp_path, "off", {**LLM, "MNN_SME2": False}, {"sme2_kernels": False}, "linux-arm64"
    )
    assert off["sme2"]["sme2_kernel_count"] == 0
    assert off["sme2"]["sme2_named_without_sme"] == ["MNNSumByAxisLForMatmul_A_SME2"]
    assert off["sme2"]["kleidiai_sme_functions"] == ["kai_kernel_matmul_clamp_f32_sme2_mopa"]


def every_line_scan(listing: str) -> tuple[dict[str, int], int]:
    """The reference: SME_INSTRUCTIONS tried on every line of the listing."""
    functions, sites, current = {}, 0, None
    for line in listing.splitlines():
        found = len(SME_INSTRUCTIONS.findall(line))
        sites += found
        label = SYMBOL_LABEL.match(line)
        if label:
            current = label.group(1)
        elif current and found:
            functions[current] = functions.get(current, 0) + 1
    return functions, sites


@pytest.mark.parametrize("case", [str.lower, str.upper])
def test_the_disassembly_scan_finds_every_sme_instruction_the_pattern_names(case):
    """The scan reads only the lines holding a hint (SME_HINTS): each instruction the pattern
    names, in either case, is counted as a regex over every line counts it, in its function;
    not in a label that names it, nor before the first label."""
    mnemonics = re.search(r"\((.*?)\)", SME_INSTRUCTIONS.pattern).group(1).split("|")
    body = [f"    {4 * i:x}:\t00000000 \t{case(m)}\tza0.s" for i, m in enumerate(mnemonics)]
    listing = "\n".join(
        [
            "   0:\t00000000 \tsmstart",  # before any label
            "0000000000001000 <kai_sme2_fmopa_kernel>:",
            *body,
            f"    2000:\t00000000 \t{case('zero')}\t{{{case('za')}}}",
            "0000000000003000 <smstop>:",  # a label that names one
            "    3000:\t00000000 \tret",
        ]
    )
    functions, sites = scan_disassembly(listing)
    assert (functions, sites) == every_line_scan(listing)
    assert functions == {"kai_sme2_fmopa_kernel": len(mnemonics) + 1} and sites == len(body) + 3


@pytest.mark.slow
@needs_cross
def test_kernel_check_fails_when_the_expectation_is_wrong(source, tmp_path):
    with pytest.raises(BuildError, match=r"`engines.liar.build.expect.sme2_kernels` is False"):
        build(
            source,
            tmp_path,
            "liar",
            {**LLM, "MNN_SME2": True},
            {"sme2_kernels": False},
            "linux-arm64",
        )


@pytest.mark.slow
def test_unused_flag_fails_naming_it(source, tmp_path):
    with pytest.raises(BuildError, match=r"did not use \['MNN_CPU_WEIGHT_DEQUANT_GEMM'\]"):
        build(source, tmp_path, "seed", {**LLM, "MNN_CPU_WEIGHT_DEQUANT_GEMM": True})


@pytest.mark.slow
def test_kleidiai_silent_fallback_fails(source, tmp_path):
    with pytest.raises(BuildError, match="KleidiAI"):
        build(source, tmp_path, "kai", {**LLM, "MNN_KLEIDIAI": True})


def test_platform_arguments():
    from mnnrepro.toolchain.cmake import platform_args

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


@pytest.mark.parametrize("tool", ["nm", "objdump"])
def test_the_kernel_check_fails_naming_a_missing_tool(tmp_path, tool):
    """Without a disassembler the SME2 kernel count was silently 0, so "the baseline has no
    SME2 kernels" passed unchecked."""
    from mnnrepro.errors import ReproError
    from mnnrepro.toolchain.kernels import sme2_kernels

    (tmp_path / "libMNN.so").write_bytes(b"\x7fELF")
    with pytest.raises(ReproError, match=f"needs the .* `no-such-{tool}`, which is not installed"):
        sme2_kernels(tmp_path, **{tool: f"no-such-{tool}"})


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("ccache"), reason="ccache (installed by .ci/run) is missing")
def test_one_tree_built_in_two_working_directories_compiles_once(root, tmp_path, monkeypatch):
    """Every test (and every user's second experiment directory) builds the same tree at another
    absolute path: the second build must take every object from ccache, not compile again (it
    compiled everything before CCACHE_BASEDIR: ccache hashed the absolute -I and source
    paths)."""
    import subprocess

    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    monkeypatch.delenv("CCACHE_BASEDIR", raising=False)
    monkeypatch.delenv("CCACHE_NOHASHDIR", raising=False)

    def stats() -> dict[str, int]:
        out = subprocess.run(
            ["ccache", "--print-stats"], capture_output=True, text=True, check=True
        ).stdout
        return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines())}

    def compiles() -> tuple[int, int]:
        """(compiled, taken from the cache) so far."""
        s = stats()
        return s["cache_miss"], s["direct_cache_hit"] + s["preprocessed_cache_hit"]

    seen = []
    for workdir in ("first", "second"):
        work = tmp_path / workdir
        shutil.copytree(root / "tests" / "data" / "fake-mnn", work / "resources" / "src")
        monkeypatch.chdir(work)  # a rule's script runs in the workflow's working directory
        source = {**FAKE, "path": str(work / "resources" / "src")}
        spec = {"platform": "host", "flags": {**LLM, "MNN_SME2": False}}
        build_engine(BuildJob("e", source, spec, "resources/build/e", "engines/e", io.StringIO()))
        seen.append(compiles())
    (compiled_first, cached_first), (compiled, cached) = seen
    objects = compiled_first + cached_first
    assert compiled_first > 0 and compiled == compiled_first  # the second compiled nothing
    assert cached - cached_first == objects  # every object of the second came from the cache


@pytest.mark.slow
def test_a_build_directory_copied_with_its_working_directory_builds_again(source, tmp_path):
    """A working directory moved or copied keeps CMake caches written for the old path, which
    CMake refuses ("CMakeCache.txt directory ... is different"): the stale cache is dropped
    and the build configures again where it now is."""
    from mnnrepro.toolchain.cmake import forget_moved_cache

    first = build(source, tmp_path / "old", "sme2-off", {**LLM, "MNN_SME2": False})
    shutil.copytree(tmp_path / "old", tmp_path / "new")
    assert forget_moved_cache(tmp_path / "old" / "build-sme2-off") is False  # its own: kept
    again = build(source, tmp_path / "new", "sme2-off", {**LLM, "MNN_SME2": False})
    assert again["cmake_cache"] == first["cmake_cache"]
    assert "llm_bench" in {f["path"] for f in again["files"]}


def test_a_flag_is_on_as_cmake_reads_it():
    """MNN_BUILD_TEST and CMAKE_UNITY_BUILD are read as CMake's if() reads them: a flag given
    as a string is on in any case, or as a non-zero number."""
    for value in (True, "ON", "on", "Yes", "TRUE", "y", "1", "2"):
        assert flag_on(value), value
    for value in (False, "OFF", "off", "no", "FALSE", "0", "0.0", "", "NOTFOUND"):
        assert not flag_on(value), value


@pytest.mark.slow
def test_a_tool_built_from_a_moved_checkout_into_the_same_build_directory_builds_again(tmp_path):
    """One working directory, the workflow's checkout moved (or a second clone run against
    it): the tools' CMake caches name the old sources, which CMake refuses ("does not match
    the source ... used to generate cache"); the stale cache is dropped and the tool built
    from where its sources now are."""
    from mnnrepro.toolchain.tools import MASK_LIBRARY, MASK_SOURCE, build_tool

    built = []
    for checkout in ("old", "new"):
        source = shutil.copytree(MASK_SOURCE, tmp_path / checkout / "sme_mask")
        with open(tmp_path / f"{checkout}.log", "w") as log:
            args = ("host", None, {}, str(tmp_path / "build"), str(tmp_path / checkout), log)
            built.append(build_tool(source, MASK_LIBRARY, *args, language="C"))
    assert built[0]["source_sha256"] == built[1]["source_sha256"]
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    assert f"CMAKE_HOME_DIRECTORY:INTERNAL={tmp_path / 'new' / 'sme_mask'}" in cache
