"""What every kind's CMake + Ninja (+ ccache) build shares, and how a build is described.

* configure fails if CMake reports a -D flag as unused (a typo or a removed option would
  silently build something else);
* a build.json starts with the same fields for every kind (build_record: the engine, its
  source, toolchain and configure command; cmake_cache: its CMakeCache options);
* the CMake/Ninja output streams into the rule's log while it runs, with [n/N] progress on
  the console.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from mnnrepro.toolchain import BuildError
from mnnrepro.toolchain.records import flag_text

UNUSED_MARKER = "Manually-specified variables were not used by the project:"


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


def forget_moved_cache(build_dir: str | os.PathLike, source: str | None = None) -> bool:
    """Remove a CMake cache written for another directory (a working directory moved or
    copied) or for another source directory (the workflow's checkout moved, its tools' sources
    with it), which CMake refuses to configure with; the compiler cache keeps the rebuild
    cheap. True when one was removed."""
    cache = Path(build_dir, "CMakeCache.txt")
    if not cache.is_file():
        return False
    text = cache.read_text("utf-8", "replace")
    written_for = re.search(r"(?m)^CMAKE_CACHEFILE_DIR:INTERNAL=(.*)$", text)
    built_from = re.search(r"(?m)^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", text)
    moved = written_for is not None and not same_path(written_for.group(1), build_dir)
    known = source is not None and built_from is not None
    other_source = known and not same_path(built_from.group(1), source)
    if not (moved or other_source):
        return False
    cache.unlink()
    shutil.rmtree(Path(build_dir, "CMakeFiles"), ignore_errors=True)
    return True


def same_path(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def check_compilers(flags: dict, flags_key: str) -> None:
    """A compiler the flags name (CMAKE_C_COMPILER, CMAKE_CXX_COMPILER) must be installed: one
    line naming the config key, before CMake fails in its log."""
    for key in ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER"):
        name = flags.get(key)
        if name and not shutil.which(str(name)):
            raise BuildError(
                f"config key `{flags_key}`: {key} {name} is not installed (not found on PATH)"
            )


def configure_checked(
    flags_key: str,
    source: str,
    build_dir: str,
    flags: dict,
    extra: list[str],
    log_file,
    own=(),
) -> tuple[list[str], str]:
    """Configure build_dir with a config's flags (`flags_key`, named in every failure): a
    compiler they name that is not installed fails before CMake runs, a flag CMake reports
    unused (but the builder's `own` ones) after. The command and CMake's output."""
    check_compilers(flags, flags_key)
    cmd = configure_command(source, build_dir, flags, extra)
    output = run_logged(cmd, log_file)
    unused = [u for u in unused_flags(output) if u not in own]
    if unused:
        raise BuildError(
            f"config key `{flags_key}`: CMake did not use {unused} "
            "(removed or misspelled options build something else)"
        )
    return cmd, output


def configure_command(
    source: str, build_dir: str, flags: dict[str, str], extra: list[str]
) -> list[str]:
    """The configure command for build_dir, which it readies (forget_moved_cache)."""
    forget_moved_cache(build_dir, source)
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


def build_environment(base_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """The environment of every configure and build command: this one, plus ccache's settings
    (where CMake launches it) that let builds share their cached objects.

    ccache hashes a compile's command line, whose -I and source paths are absolute: two build
    directories of one tree (llama.cpp's quantizer and a host engine), or one tree in two
    working directories (each test's copy of the repository), never matched, and every build
    compiled everything. CCACHE_BASEDIR (the working directory, where resources/ and the build
    directories are) makes ccache rewrite the paths below it relative to the compiling
    directory, the same for every build directory at the same depth; CCACHE_NOHASHDIR leaves
    that directory out of the hash. A user's own CCACHE_BASEDIR or CCACHE_NOHASHDIR wins."""
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", str(Path(base_dir or os.getcwd()).resolve()))
    env.setdefault("CCACHE_NOHASHDIR", "true")
    return env


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
        env=build_environment() if env is None else env,
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


def cmake_cache(
    build_dir: str | os.PathLike, prefixes=("MNN_", "LLM_", "KLEIDIAI", "CMAKE_BUILD_TYPE")
) -> dict:
    """The cache entries whose names start with prefixes (the build type as CMake kept it:
    a project may replace an empty one, llama.cpp with Release)."""
    values = {}
    for line in Path(build_dir, "CMakeCache.txt").read_text(errors="replace").splitlines():
        m = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", line)
        if m and m.group(1).startswith(prefixes):
            values[m.group(1)] = m.group(2)
    return values


def compiler(build_dir: str | os.PathLike, language: str = "CXX") -> dict:
    """The compiler (path, --version's first line, launcher) CMake chose for language."""
    cache = {}
    for line in Path(build_dir, "CMakeCache.txt").read_text(errors="replace").splitlines():
        m = re.match(r"^(CMAKE_(?:CXX|C)_COMPILER(?:_LAUNCHER)?):[A-Z]+=(.*)$", line)
        if m:
            cache[m.group(1)] = m.group(2)
    other = "C" if language == "CXX" else "CXX"
    path = cache.get(f"CMAKE_{language}_COMPILER") or cache.get(f"CMAKE_{other}_COMPILER", "")
    version = ""
    if path:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
        version = proc.stdout.splitlines()[0] if proc.stdout else ""
    launcher = cache.get(f"CMAKE_{language}_COMPILER_LAUNCHER")
    return {"path": path, "version": version, "launcher": launcher}


TARGET_ARCH = {"android-arm64": "aarch64", "linux-arm64": "aarch64"}


def target_arch(platform_name: str) -> str:
    """The CPU architecture an engine is built for (host: this machine's)."""
    return TARGET_ARCH.get(platform_name) or platform.machine()


def build_record(
    engine: str, kind: str, spec: dict, source: dict, ndk, build_dir, cmd: list[str]
) -> dict:
    """What every build.json says first: the engine, its kind and platform, the source it was
    built from, the toolchain and the configure command."""
    return {
        "engine": engine,
        "kind": kind,
        "platform": spec["platform"],
        "target_arch": target_arch(spec["platform"]),
        "version": source.get("commit") or "unknown",
        "pin": f"{source['kind']}:{source.get('commit')}",
        "source": source,
        "ndk": ndk,
        "compiler": compiler(build_dir),
        "cmake_command": cmd,
    }
