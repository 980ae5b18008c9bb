"""Build MNN from its source tree with CMake + Ninja (+ ccache), and describe what came out.

* configure fails where MNN's KleidiAI download fell back to "Building without KleidiAI" (the
  build would silently differ), as for any unused -D flag (toolchain/cmake.py);
* artifacts (llm_bench, llm_demo, every shared library beside them) are collected into one
  engine directory and described in build.json (commit, toolchain, command line, the
  CMakeCache values of every MNN_*/LLM_* option, sha256 of every file, wall time, and the
  SME2 kernels found by toolchain/kernels.py).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from mnnrepro.files import file_table
from mnnrepro.toolchain import BuildError
from mnnrepro.toolchain.cmake import (
    build_record,
    cmake_cache,
    configure_checked,
    platform_args,
    run_logged,
)
from mnnrepro.toolchain.kernels import check_expectation, disassembly_tools, sme2_kernels
from mnnrepro.toolchain.records import BuildJob, flag_on, flag_text, settings_read_by

KIND = "build"  # the kind its records carry (kind.BuiltEngine.kind)
KLEIDIAI_FALLBACK = "Building without KleidiAI"


ENGINE_BINARIES = ("llm_bench", "llm_demo")
# MNN's own test suite (MNN_BUILD_TEST=ON), kept below the engine's directory so that the
# SME2 kernel check reads the engine's libraries and tools only; pushed with them
TEST_SUITE = "tests/run_test.out"


def collect(
    build_dir: str | os.PathLike, engine_dir: str | os.PathLike, with_tests: bool = False
) -> list[str]:
    """Copy llm_bench, llm_demo, every shared library of the build and (with_tests) MNN's
    test suite into engine_dir."""
    build_dir, engine_dir = Path(build_dir), Path(engine_dir)
    engine_dir.mkdir(parents=True, exist_ok=True)
    picked = []
    wanted = [(name, name) for name in ENGINE_BINARIES]
    wanted += [(Path(TEST_SUITE).name, TEST_SUITE)] if with_tests else []
    for name, dest in wanted:
        found = sorted(p for p in build_dir.rglob(name) if p.is_file() and os.access(p, os.X_OK))
        if not found:
            raise BuildError(f"the build produced no {name}")
        (engine_dir / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(found[0], engine_dir / dest)
        picked.append(dest)
    for lib in sorted(p for p in build_dir.rglob("*.so") if p.is_file()):
        if not (engine_dir / lib.name).exists():
            shutil.copy2(lib, engine_dir / lib.name)
            picked.append(lib.name)
    return picked


def build_engine(job: BuildJob, extra_flags: dict | None = None) -> dict:
    """Configure, build, collect and check one engine; returns build.json's content."""
    start = time.monotonic()
    engine, source, spec, ndk = job.engine, job.source, job.spec, job.ndk
    build_dir, engine_dir, log_file = job.build_dir, job.engine_dir, job.log_file
    flags = {**spec.get("flags", {}), **(extra_flags or {})}
    extra = platform_args(spec["platform"], ndk["path"] if ndk else None)
    cmd, output = configure_checked(
        f"engines.{engine}.build.flags", source["path"], build_dir, flags, extra, log_file
    )
    if KLEIDIAI_FALLBACK in output:
        raise BuildError(
            "MNN's configure could not get KleidiAI and would build without it; "
            "provide KLEIDIAI_SRC_DIR from the pinned fetch"
        )
    with_tests = flag_on(flags.get("MNN_BUILD_TEST", False))
    targets = spec.get("targets", list(ENGINE_BINARIES)) + (["run_test.out"] * with_tests)
    run_logged(
        ["cmake", "--build", str(build_dir), "-j", str(job.jobs), "--target", *targets],
        log_file,
        progress=f"build {engine}",
    )
    if Path(engine_dir).exists():
        shutil.rmtree(engine_dir)
    collect(build_dir, engine_dir, with_tests)
    kernels = sme2_kernels(engine_dir, **disassembly_tools(spec, ndk))
    check_expectation(engine, kernels, spec.get("expect", {}))
    return {
        **build_record(engine, KIND, spec, source, ndk, build_dir, cmd),
        "cmake_cache": cmake_cache(build_dir),
        "flags": {k: flag_text(v) for k, v in sorted(flags.items())},
        "sme2": kernels,
        "files": file_table(engine_dir),
        "test_suite": TEST_SUITE if with_tests else None,
        "reads_settings": settings_read_by(p for p in Path(engine_dir).iterdir() if p.is_file()),
        "build_wall_s": round(time.monotonic() - start, 1),
    }
