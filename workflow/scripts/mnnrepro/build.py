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

from mnnrepro.engine import flag_text
from mnnrepro.hashing import file_table, sha256_file

log = logging.getLogger(__name__)
UNUSED_MARKER = "Manually-specified variables were not used by the project:"
KLEIDIAI_FALLBACK = "Building without KleidiAI"
ENGINE_BINARIES = ("llm_bench", "llm_demo")
SME2_SYMBOL = re.compile(r"\b\w*sme2\w*\b", re.I)
SME_INSTRUCTIONS = re.compile(
    r"\b(smstart|smstop|fmopa|bfmopa|smopa|umopa|sumopa|usmopa|fmops|smops|umops)\b|"
    r"\bzero\s+\{za",
    re.I,
)
SYMBOL_LABEL = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
# The disassembler per platform: a host's own objdump cannot decode arm64.
DISASSEMBLERS = {"linux-arm64": "aarch64-linux-gnu-objdump"}


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
        # no RPATH into the build directory: engines run with LD_LIBRARY_PATH set to their
        # own directory, and a rebuild elsewhere gives the same bytes (the same measurement)
        "-DCMAKE_SKIP_BUILD_RPATH=ON",
    ]
    if shutil.which("ccache"):
        cmd += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    return cmd + extra + [f"-D{k}={flag_text(v)}" for k, v in sorted(flags.items())]


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


NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")


def run_logged(cmd: list[str], log_file, cwd=None, env=None, progress: str = "") -> str:
    """Run cmd, streaming its output into log_file line by line as it comes (a user can tail
    the rule's log during a long build); with `progress`, also print Ninja's [n/N] to the
    console at every tenth of the way. Returns the whole output; raises on failure."""
    log_file.write("$ " + " ".join(cmd) + "\n")
    log_file.flush()
    lines, shown = [], -1
    with subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
    ) as proc:
        for line in proc.stdout:
            lines.append(line)
            log_file.write(line)
            log_file.flush()
            step = NINJA_PROGRESS.match(line)
            if progress and step:
                done, total = int(step.group(1)), int(step.group(2))
                tenth = 10 * done // total
                if tenth > shown or done == total:
                    shown = tenth
                    print(f"{progress}: [{done}/{total}]", flush=True)
    if proc.returncode != 0:
        raise BuildError(f"`{' '.join(cmd[:3])} ...` failed (exit {proc.returncode}); see the log")
    return "".join(lines)


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


def sme_functions(disassembly: str) -> dict[str, int]:
    """Symbol -> number of SME instructions in its body (`objdump -d`: a body runs from its
    label to the next one)."""
    functions, current = {}, None
    for line in disassembly.splitlines():
        label = SYMBOL_LABEL.match(line)
        if label:
            current = label.group(1)
        elif current and SME_INSTRUCTIONS.search(line):
            functions[current] = functions.get(current, 0) + 1
    return functions


def sme2_kernels(engine_dir: str | os.PathLike, nm: str = "nm", objdump: str = "objdump") -> dict:
    """MNN's own SME2 kernels: functions named for SME2 whose bodies execute SME instructions.

    The name alone is not enough: MNN 3.6.1 builds two NEON helpers named for the SME2 tile
    layout (`MNNSumByAxisLForMatmul_A_SME2`, `..._Hp64`) into every arm64 build, SME2 OFF
    included. KleidiAI's own SME micro-kernels (`kai_*`, which MNN_SME2=OFF does not remove)
    are listed apart. Where symbols are stripped only the instruction sites can be counted.
    """
    symbols, functions, sites = set(), {}, 0
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
            for name, count in sme_functions(dis).items():
                functions[name] = functions.get(name, 0) + count
    kernels = sorted(symbols & set(functions))
    return {
        "sme2_kernels": kernels,
        "sme2_kernel_count": len(kernels),
        "sme2_named_without_sme": sorted(symbols - set(functions)),
        "kleidiai_sme_functions": sorted(f for f in functions if f.startswith("kai_")),
        "sme_instruction_sites": sites,
        "disassembler": objdump if shutil.which(objdump) else None,
    }


def disassembly_tools(spec: dict, ndk: dict | None) -> dict:
    """nm/objdump able to read the platform's binaries (the NDK's llvm tools for Android)."""
    tools = {}
    if spec["platform"] in DISASSEMBLERS:
        tools["objdump"] = DISASSEMBLERS[spec["platform"]]
    if spec["platform"] == "android-arm64" and ndk:
        bin_dir = Path(ndk["path"], "toolchains", "llvm", "prebuilt", "linux-x86_64", "bin")
        tools = {"nm": str(bin_dir / "llvm-nm"), "objdump": str(bin_dir / "llvm-objdump")}
    return {**tools, **spec.get("tools", {})}


def check_expectation(engine: str, kernels: dict, expect: dict) -> None:
    if "sme2_kernels" not in expect:
        return
    has = kernels["sme2_kernel_count"] > 0
    if has != expect["sme2_kernels"]:
        raise BuildError(
            f"config key `engines.{engine}.build.expect.sme2_kernels` is "
            f"{expect['sme2_kernels']}, but the build has {kernels['sme2_kernel_count']} SME2 "
            f"kernels {kernels['sme2_kernels'][:5]} (functions named for SME2 that contain SME "
            f"instructions; disassembler: {kernels['disassembler'] or 'none found'})"
        )


TARGET_ARCH = {"android-arm64": "aarch64", "linux-arm64": "aarch64"}


def target_arch(platform_name: str) -> str:
    """The CPU architecture an engine is built for (host: this machine's)."""
    import platform

    return TARGET_ARCH.get(platform_name) or platform.machine()


def can_have_sme2(record: dict) -> bool:
    """SME2 exists on arm64 only: MNN_SME2=ON builds no SME2 kernel for another architecture."""
    return record.get("target_arch", "aarch64") in ("aarch64", "arm64")


GATE_TOOL_SOURCE = Path(__file__).with_name("greedy_tool")


def build_gate_tool(
    record: dict, source: dict, engine_dir: str, build_dir: str, out_dir: str, log_file
) -> dict:
    """Build mnn_greedy (the correctness gate's token-id tool) for one built engine: the same
    platform arguments and compiler launcher, MNN's headers, that engine's own libraries."""
    libs = sorted(str(p.resolve()) for p in Path(engine_dir).glob("*.so"))
    if not libs:
        raise BuildError(f"{engine_dir}: no shared library to link the gate tool against")
    ndk = (record.get("ndk") or {}).get("path")
    cmd = configure_command(
        str(GATE_TOOL_SOURCE),
        build_dir,
        {"MNN_SOURCE": source["path"], "MNN_LIBS": ";".join(libs)},
        platform_args(record["platform"], ndk),
    )
    run_logged(cmd, log_file)
    run_logged(["cmake", "--build", str(build_dir)], log_file)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(build_dir, "mnn_greedy"), out / "mnn_greedy")
    return {
        "tool": "mnn_greedy",
        "engine": record["engine"],
        "source_sha256": {p.name: sha256_file(p) for p in sorted(GATE_TOOL_SOURCE.iterdir())},
        "compiler": compiler(build_dir),
        "cmake_command": cmd,
        "linked": [Path(lib).name for lib in libs],
        "files": file_table(out),
    }


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
        ["cmake", "--build", str(build_dir), "-j", str(jobs), "--target", *targets],
        log_file,
        progress=f"build {engine}",
    )
    Path(engine_dir).mkdir(parents=True, exist_ok=True)
    for old in Path(engine_dir).iterdir():
        old.unlink()
    collect(build_dir, engine_dir)
    kernels = sme2_kernels(engine_dir, **disassembly_tools(spec, ndk))
    check_expectation(engine, kernels, spec.get("expect", {}))
    return {
        "engine": engine,
        "kind": "build",
        "platform": spec["platform"],
        "target_arch": target_arch(spec["platform"]),
        "version": source.get("commit") or "unknown",
        "pin": f"{source['kind']}:{source.get('commit')}",
        "source": source,
        "ndk": ndk,
        "compiler": compiler(build_dir),
        "cmake_command": cmd,
        "cmake_cache": cmake_cache(build_dir),
        "flags": {k: flag_text(v) for k, v in sorted(flags.items())},
        "sme2": kernels,
        "files": file_table(engine_dir),
        "build_wall_s": round(time.monotonic() - start, 1),
    }
