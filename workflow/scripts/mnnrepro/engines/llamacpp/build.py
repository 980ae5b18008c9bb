"""llama.cpp, the control engine: its source (the tree llama-cpp-python's sdist vendors, or a
local checkout), KleidiAI from the pinned tag archive, and builds of llama-bench, libllama and
the ggml libraries for the host, linux-arm64 (clang-16 over the aarch64 gcc sysroot: Debian's
gcc-12 cross compiler fails on a KleidiAI bf16 kernel) and android-arm64 (the NDK).

KleidiAI's SME micro-kernels are listed in build.json like MNN's SME2 kernels (functions that
execute SME instructions); `expect.sme_kernels` fails a build without (or with) them.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from mnnrepro.fetch import download, pin_urls, publish_dir
from mnnrepro.files import file_table
from mnnrepro.toolchain import BuildError
from mnnrepro.toolchain.cmake import (
    build_record,
    cmake_cache,
    compiler,
    configure_checked,
    platform_args,
    run_logged,
)
from mnnrepro.toolchain.kernels import disassembly_tools, sme2_kernels
from mnnrepro.toolchain.records import (
    PLATFORM_COMPILERS,
    BuildJob,
    flag_on,
    flag_text,
    short_digest,
    source_key,
)
from mnnrepro.toolchain.source import SourceError, describe_local, provide_kleidiai
from mnnrepro.unpack import safe_extract

ENGINE_TARGETS = ("llama-bench",)
QUANTIZER = "llama-quantize"
VENDORED = Path("vendor", "llama.cpp")  # where llama-cpp-python's sdist keeps the tree
# Every build: shared libraries (the gate tool links libllama), no OpenMP (its runtime is not
# on every device; ggml's own thread pool instead), no -march=native (the bytes must not depend
# on the build machine), and nothing of llama.cpp's that needs the network or a web UI.
BASE_FLAGS = {
    "BUILD_SHARED_LIBS": True,
    # libllama.so, not libllama.so.0 -> .so.0.5.0: one file per library, found by that name
    "CMAKE_PLATFORM_NO_VERSIONED_SONAME": True,
    "GGML_NATIVE": False,
    "GGML_OPENMP": False,
    "LLAMA_BUILD_TESTS": False,
    "LLAMA_BUILD_EXAMPLES": False,
    "LLAMA_BUILD_SERVER": False,
    "LLAMA_BUILD_APP": False,
    "LLAMA_OPENSSL": False,
}
# clang for aarch64 over Debian's cross sysroot (binutils-aarch64-linux-gnu, libstdc++ of
# g++-aarch64-linux-gnu): the only cross compiler here that builds KleidiAI v1.24.0.
CLANG_CXX = "clang++-16"  # linux-arm64's compiler, whose version keys its builds
COMPILERS = {**PLATFORM_COMPILERS, "linux-arm64": CLANG_CXX}
CLANG = CLANG_CXX.replace("clang++", "clang")
CROSS_TRIPLE = "aarch64-linux-gnu"


def changelog_names(tree_root: Path, version: str, commit: str) -> bool:
    """Whether llama-cpp-python's CHANGELOG says release `version` vendors llama.cpp `commit`."""
    text = (tree_root / "CHANGELOG.md").read_text(encoding="utf-8", errors="replace")
    section = re.search(rf"^## \[{re.escape(version)}\]\n(.*?)(?=^## \[|\Z)", text, re.M | re.S)
    if not section:
        return False
    named = re.findall(r"llama\.cpp@([0-9a-f]{7,40})", section.group(1))
    return any(n.startswith(commit) or commit.startswith(n) for n in named)


def provide_source(source: dict, kleidiai: dict, cache: str | Path) -> dict:
    """The llama.cpp tree every llamacpp build uses, with the CMake flags that pin what it
    would otherwise download (KleidiAI) or guess (the commit it reports)."""
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    if "path" in source:
        receipt = describe_local(source["path"], source.get("allow_dirty", False))
        receipt["commit"] = receipt["commit"][:9]
    else:
        sdist = source["sdist"]
        tarball = download(
            pin_urls(sdist), cache / f"llama_cpp_python-{sdist['version']}.tar.gz", sdist["sha256"]
        )
        dest = cache / "sdist"
        if not dest.is_dir():
            with publish_dir(dest) as staging:
                safe_extract(tarball, staging)
        roots = [p for p in dest.iterdir() if p.is_dir()]
        if len(roots) != 1 or not (roots[0] / VENDORED / "CMakeLists.txt").is_file():
            raise SourceError(
                f"config key `llamacpp.source.sdist`: {tarball.name} holds no {VENDORED} tree"
            )
        if not changelog_names(roots[0], sdist["version"], sdist["commit"]):
            raise SourceError(
                f"config key `llamacpp.source.sdist.commit`: the CHANGELOG of "
                f"llama-cpp-python {sdist['version']} does not name llama.cpp@{sdist['commit']}"
            )
        receipt = {
            "kind": "sdist",
            "url": pin_urls(sdist)[0],
            "sha256": sdist["sha256"],
            "version": sdist["version"],
            "commit": sdist["commit"],
            "dirty": False,
            "path": str((roots[0] / VENDORED).resolve()),
        }
    receipt["cmake_flags"] = {"LLAMA_BUILD_COMMIT": receipt["commit"]}  # llama-bench reports it
    if kleidiai:
        receipt["kleidiai"] = provide_kleidiai(kleidiai, cache)
        # FetchContent uses this tree instead of downloading KleidiAI's release asset
        receipt["cmake_flags"]["FETCHCONTENT_SOURCE_DIR_KLEIDIAI"] = receipt["kleidiai"]["path"]
    return receipt


def cross_args(platform: str, ndk: str | None) -> list[str]:
    if platform != "linux-arm64":
        return platform_args(platform, ndk)
    for tool in (CLANG, CLANG_CXX, f"{CROSS_TRIPLE}-ld"):
        if not shutil.which(tool):
            raise BuildError(
                f"a linux-arm64 llama.cpp build needs `{tool}`, which is not installed (Debian: "
                "apt-get install clang-16 g++-aarch64-linux-gnu binutils-aarch64-linux-gnu; "
                "gcc-12's cross compiler fails on KleidiAI v1.24.0)"
            )
    flags = f"--target={CROSS_TRIPLE}"
    return [
        "-DCMAKE_SYSTEM_NAME=Linux",
        "-DCMAKE_SYSTEM_PROCESSOR=aarch64",
        f"-DCMAKE_C_COMPILER={CLANG}",
        f"-DCMAKE_CXX_COMPILER={CLANG_CXX}",
        f"-DCMAKE_C_COMPILER_TARGET={CROSS_TRIPLE}",
        f"-DCMAKE_CXX_COMPILER_TARGET={CROSS_TRIPLE}",
        f"-DCMAKE_ASM_COMPILER_TARGET={CROSS_TRIPLE}",
        f"-DCMAKE_ASM_FLAGS={flags}",
    ]


# A unity build (`CMAKE_UNITY_BUILD: true` in an engine's or the quantizer's flags) compiles
# llama.cpp in about 70 % of the CPU time of a build one source at a time
# (benchmarks/results/llamacpp_build_cost.md); it needs one source compiled alone, which this
# CMake file, included after every project(), arranges.
UNITY_INCLUDE = Path(__file__).with_name("llamacpp_unity.cmake")


def unity_include(flags: dict) -> dict:
    """CMAKE_PROJECT_INCLUDE for a unity build, nothing otherwise."""
    unity = flag_on(flags.get("CMAKE_UNITY_BUILD", False))
    return {"CMAKE_PROJECT_INCLUDE": str(UNITY_INCLUDE)} if unity else {}


def configure(
    flags_key: str, source: dict, spec: dict, build_dir: str, log_file, ndk: dict | None, extra=None
) -> list[str]:
    """Configure build_dir; a flag CMake reports unused fails, naming `flags_key`, the config
    key the flags come from."""
    flags = {**BASE_FLAGS, **spec.get("flags", {}), **source["cmake_flags"], **(extra or {})}
    flags.update(unity_include(flags))
    toolchain = cross_args(spec["platform"], ndk and ndk["path"])
    own = {**source["cmake_flags"], **BASE_FLAGS}  # the builder's, not the config's
    path = source["path"]
    return configure_checked(flags_key, path, build_dir, flags, toolchain, log_file, own)[0]


def collect(build_dir: str, out_dir: str, programs: tuple[str, ...]) -> None:
    """The programs and every shared library of the build, flat in out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    bin_dir = Path(build_dir, "bin")
    for name in programs:
        if not (bin_dir / name).is_file():
            raise BuildError(f"the llama.cpp build produced no {name}")
        shutil.copy2(bin_dir / name, out / name)
    for lib in sorted(bin_dir.glob("*.so")):
        shutil.copy2(lib, out / lib.name)


def kleidiai_kernels(engine_dir: str, spec: dict, ndk: dict | None) -> dict:
    """KleidiAI's SME micro-kernels in the build (kai_* functions with SME instructions)."""
    found = sme2_kernels(engine_dir, **disassembly_tools(spec, ndk))
    functions = found["kleidiai_sme_functions"]
    expect = spec.get("expect", {})
    if "sme_kernels" in expect and bool(functions) != expect["sme_kernels"]:
        raise BuildError(
            f"config key `engines.{spec['engine']}.llamacpp.expect.sme_kernels` is "
            f"{expect['sme_kernels']}, but the build has {len(functions)} KleidiAI SME "
            f"functions (disassembler: {found['disassembler']})"
        )
    return {
        "kleidiai_sme_functions": functions,
        "kleidiai_sme_function_count": len(functions),
        "sme_instruction_sites": found["sme_instruction_sites"],
        "disassembler": found["disassembler"],
    }


# the cache entries build.json records: llama.cpp's and ggml's options, KleidiAI's source, the
# build type as CMake kept it, and a unity build with its project include
CACHE_RECORDED = (
    "GGML_",
    "LLAMA_",
    "FETCHCONTENT_SOURCE_DIR",
    "CMAKE_BUILD_TYPE",
    "CMAKE_UNITY_BUILD",
    "CMAKE_PROJECT_INCLUDE",
)


def build_engine(job: BuildJob) -> dict:
    """Configure, build, collect and check one llama.cpp engine; returns build.json."""
    start = time.monotonic()
    engine, source, spec, ndk = job.engine, job.source, job.spec, job.ndk
    build_dir, engine_dir, log_file = job.build_dir, job.engine_dir, job.log_file
    cmd = configure(f"engines.{engine}.llamacpp.flags", source, spec, build_dir, log_file, ndk)
    programs = engine_programs(spec)
    run_logged(
        ["cmake", "--build", build_dir, "-j", str(job.jobs), "--target", *programs, "llama"],
        log_file,
        progress=f"build {engine}",
    )
    collect(build_dir, engine_dir, programs)
    flags = {**BASE_FLAGS, **spec.get("flags", {})}
    return {
        **build_record(engine, "llamacpp", spec, source, ndk, build_dir, cmd),
        "cmake_cache": cmake_cache(build_dir, CACHE_RECORDED),
        "flags": {k: flag_text(v) for k, v in sorted(flags.items())},
        "sme": kleidiai_kernels(engine_dir, {**spec, "engine": engine}, ndk),
        "files": file_table(engine_dir),
        "build_wall_s": round(time.monotonic() - start, 1),
    }


QUANTIZER_FLAGS = "llamacpp.quantizer.flags"  # the quantizer build's config key


def engine_programs(spec: dict) -> tuple[str, ...]:
    """What an engine build collects: llama-bench, and on the host llama-quantize too (a few
    seconds more), so that the quantizer is not built again from the same tree and flags."""
    return ENGINE_TARGETS + ((QUANTIZER,) if spec["platform"] == "host" else ())


def quantizer_engine(engines: dict, used: list[str], flags: dict) -> str | None:
    """The first of `used` (engine name -> config entry in `engines`) that is a llama.cpp
    build for the host with `flags` (`llamacpp.quantizer.flags`) as its flags: its build
    holds llama-quantize. None: the quantizer is built alone (quantizer_dir)."""
    for name in used:
        spec = engines[name].get("llamacpp")
        if spec and spec["platform"] == "host" and spec.get("flags", {}) == flags:
            return name
    return None


def quantizer_dir(tree: dict, flags: dict) -> str:
    """Where llama-quantize for this host is built to when no engine's build holds it: one
    directory per llama.cpp tree (the `llamacpp` section) and `llamacpp.quantizer.flags`
    (none: the key every quantizer always had)."""
    key = source_key(tree) + (f"-{short_digest(flags)}" if flags else "")
    return f"results/tools/llama-quantize-{key}"


def build_quantizer(
    source: dict, build_dir: str, out_dir: str, log_file, jobs: int = 2, flags=None
) -> dict:
    """llama-quantize for this host (the model is quantized here, whatever device runs it),
    with `llamacpp.quantizer.flags`."""
    spec = {"platform": "host", "flags": flags or {}}
    cmd = configure(QUANTIZER_FLAGS, source, spec, build_dir, log_file, None)
    run_logged(["cmake", "--build", build_dir, "-j", str(jobs), "--target", QUANTIZER], log_file)
    collect(build_dir, out_dir, (QUANTIZER,))
    return {
        "tool": QUANTIZER,
        "source": {k: source[k] for k in ("kind", "commit", "path")},
        "compiler": compiler(build_dir),
        "cmake_command": cmd,
        "files": file_table(out_dir),
    }
