"""Build MNN engines with CMake + Ninja (+ ccache), and prove what they contain.

* configure fails if CMake reports a -D flag as unused (a typo or a removed option would
  silently build something else), or if MNN's KleidiAI download fell back to "Building
  without KleidiAI" (the build would silently differ);
* artifacts (llm_bench, llm_demo, every shared library beside them) are collected into one
  engine directory and described in build.json (commit, toolchain, command line, the
  CMakeCache values of every MNN_*/LLM_* option, sha256 of every file, wall time);
* the SME2 kernel check counts MNN's own `*_SME2*` functions (symbols) or, in stripped
  binaries, SME instructions in the disassembly, and fails when an engine's declared
  expectation does not hold.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from mnnrepro.hashing import file_table

log = logging.getLogger(__name__)
UNUSED_MARKER = "Manually-specified variables were not used by the project:"
KLEIDIAI_FALLBACK = "Building without KleidiAI"
ENGINE_BINARIES = ("llm_bench", "llm_demo")
SME2_SYMBOL = re.compile(r"\b\w*_SME2\w*\b")
SME_INSTRUCTIONS = re.compile(r"\b(smstart|smstop|fmopa|smopa|umopa|zero\s+\{za)", re.I)


class BuildError(RuntimeError):
    pass


def platform_args(platform: str, ndk: str | None = None, api_level: int = 21) -> list[str]:
    """CMake arguments of a platform (android-arm64 as MNN's project/android/build_64.sh)."""
    if platform == "host":
        return []
    if platform == "android-arm64":
        if not ndk:
            raise BuildError("platform android-arm64 needs the NDK")
        page = "-Wl,-z,max-page-size=16384"  # 16 KB pages (Android 15+ devices)
        return [
            f"-DCMAKE_TOOLCHAIN_FILE={ndk}/build/cmake/android.toolchain.cmake",
            "-DANDROID_ABI=arm64-v8a",
            f"-DANDROID_PLATFORM=android-{api_level}",
            "-DANDROID_STL=c++_static",
            f"-DCMAKE_SHARED_LINKER_FLAGS={page}",
            f"-DCMAKE_EXE_LINKER_FLAGS={page}",
        ]
    if platform == "linux-arm64":
        # Debian's cross compiler (g++-aarch64-linux-gnu); the binaries run on an arm64 Linux
        # board or on the emulated `qemu` device.
        return [
            "-DCMAKE_SYSTEM_NAME=Linux",
            "-DCMAKE_SYSTEM_PROCESSOR=aarch64",
            "-DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc",
            "-DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++",
        ]
    raise BuildError(f"unknown platform {platform!r}; known: host, android-arm64, linux-arm64")


def configure_command(
    source: str, build_dir: str, flags: dict[str, str], extra: list[str]
) -> list[str]:
    cmd = [
        "cmake",
        "-S",
        str(source),
        "-B",
        str(build_dir),
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
    ]
    if shutil.which("ccache"):
        cmd += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    return cmd + extra + [f"-D{k}={_flag(v)}" for k, v in sorted(flags.items())]


def _flag(value) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def unused_flags(cmake_output: str) -> list[str]:
    if UNUSED_MARKER not in cmake_output:
        return []
    tail = cmake_output.split(UNUSED_MARKER, 1)[1].splitlines()
    names = []
    for line in tail[1:]:
        if not line.strip():
            if names:
                break
            continue
        if not line.startswith((" ", "\t")):
            break
        names.append(line.strip())
    return names


def run_logged(cmd: list[str], log_file, cwd=None, env=None) -> str:
    log_file.write("$ " + " ".join(cmd) + "\n")
    log_file.flush()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    log_file.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise BuildError(f"`{' '.join(cmd[:3])} ...` failed (exit {proc.returncode}); see the log")
    return proc.stdout + proc.stderr


def cmake_cache(build_dir: str | os.PathLike, prefixes=("MNN_", "LLM_", "KLEIDIAI")) -> dict:
    values = {}
    for line in Path(build_dir, "CMakeCache.txt").read_text(errors="replace").splitlines():
        m = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", line)
        if m and m.group(1).startswith(prefixes):
            values[m.group(1)] = m.group(2)
    return values


def compiler(build_dir: str | os.PathLike) -> dict:
    cache = {}
    for line in Path(build_dir, "CMakeCache.txt").read_text(errors="replace").splitlines():
        m = re.match(r"^(CMAKE_(?:CXX|C)_COMPILER(?:_LAUNCHER)?):[A-Z]+=(.*)$", line)
        if m:
            cache[m.group(1)] = m.group(2)
    path = cache.get("CMAKE_CXX_COMPILER") or cache.get("CMAKE_C_COMPILER", "")
    version = ""
    if path:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
        version = proc.stdout.splitlines()[0] if proc.stdout else ""
    launcher = cache.get("CMAKE_CXX_COMPILER_LAUNCHER") or cache.get("CMAKE_C_COMPILER_LAUNCHER")
    return {"path": path, "version": version, "launcher": launcher}


def collect(build_dir: str | os.PathLike, engine_dir: str | os.PathLike) -> list[str]:
    """Copy llm_bench, llm_demo and every shared library of the build into engine_dir."""
    build_dir, engine_dir = Path(build_dir), Path(engine_dir)
    engine_dir.mkdir(parents=True, exist_ok=True)
    picked = []
    for name in ENGINE_BINARIES:
        found = sorted(p for p in build_dir.rglob(name) if p.is_file() and os.access(p, os.X_OK))
        if not found:
            raise BuildError(f"the build produced no {name}")
        shutil.copy2(found[0], engine_dir / name)
        picked.append(name)
    for lib in sorted(p for p in build_dir.rglob("*.so") if p.is_file()):
        if not (engine_dir / lib.name).exists():
            shutil.copy2(lib, engine_dir / lib.name)
            picked.append(lib.name)
    return picked


def sme2_kernels(engine_dir: str | os.PathLike, nm: str = "nm", objdump: str = "objdump") -> dict:
    """MNN's own SME2 functions by symbol; SME instruction sites where symbols are stripped."""
    symbols, sites = set(), 0
    for path in sorted(Path(engine_dir).iterdir()):
        if not path.is_file():
            continue
        out = subprocess.run(
            [nm, "--defined-only", str(path)], capture_output=True, text=True, check=False
        ).stdout
        out += subprocess.run(
            [nm, "-D", "--defined-only", str(path)], capture_output=True, text=True, check=False
        ).stdout
        symbols.update(SME2_SYMBOL.findall(out))
        if shutil.which(objdump):
            dis = subprocess.run(
                [objdump, "-d", str(path)], capture_output=True, text=True, check=False
            ).stdout
            sites += len(SME_INSTRUCTIONS.findall(dis))
    return {
        "sme2_symbols": sorted(symbols),
        "sme2_symbol_count": len(symbols),
        "sme_instruction_sites": sites,
    }


def check_expectation(engine: str, kernels: dict, expect: dict) -> None:
    if "sme2_kernels" not in expect:
        return
    has = kernels["sme2_symbol_count"] > 0
    if has != expect["sme2_kernels"]:
        raise BuildError(
            f"config key `engines.{engine}.build.expect.sme2_kernels` is "
            f"{expect['sme2_kernels']}, but the build has {kernels['sme2_symbol_count']} SME2 "
            f"kernel symbols {kernels['sme2_symbols'][:5]}"
        )


def build_engine(
    engine: str,
    source: dict,
    spec: dict,
    build_dir: str,
    engine_dir: str,
    log_file,
    ndk: dict | None = None,
    jobs: int = 2,
    extra_flags: dict | None = None,
) -> dict:
    """Configure, build, collect and check one engine; returns build.json's content."""
    start = time.monotonic()
    flags = {**spec.get("flags", {}), **(extra_flags or {})}
    extra = platform_args(spec["platform"], ndk["path"] if ndk else None)
    cmd = configure_command(source["path"], build_dir, flags, extra)
    output = run_logged(cmd, log_file)
    unused = unused_flags(output)
    if unused:
        raise BuildError(
            f"config key `engines.{engine}.build.flags`: CMake did not use "
            f"{unused} (removed or misspelled options build something else)"
        )
    if KLEIDIAI_FALLBACK in output:
        raise BuildError(
            "MNN's configure could not get KleidiAI and would build without it; "
            "provide KLEIDIAI_SRC_DIR from the pinned fetch"
        )
    targets = spec.get("targets", list(ENGINE_BINARIES))
    run_logged(
        ["cmake", "--build", str(build_dir), "-j", str(jobs), "--target", *targets], log_file
    )
    Path(engine_dir).mkdir(parents=True, exist_ok=True)
    for old in Path(engine_dir).iterdir():
        old.unlink()
    collect(build_dir, engine_dir)
    kernels = sme2_kernels(engine_dir, **spec.get("tools", {}))
    check_expectation(engine, kernels, spec.get("expect", {}))
    return {
        "engine": engine,
        "kind": "build",
        "platform": spec["platform"],
        "version": source.get("commit") or "unknown",
        "pin": f"{source['kind']}:{source.get('commit')}",
        "source": source,
        "ndk": ndk,
        "compiler": compiler(build_dir),
        "cmake_command": cmd,
        "cmake_cache": cmake_cache(build_dir),
        "flags": {k: _flag(v) for k, v in sorted(flags.items())},
        "sme2": kernels,
        "files": file_table(engine_dir),
        "build_wall_s": round(time.monotonic() - start, 1),
    }
