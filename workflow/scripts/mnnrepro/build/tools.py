"""Small programs built with an engine's own toolchain arguments: the correctness gate's
token-id tool (greedy_tool/mnn_greedy.cpp, against the engine's headers and libraries) and the
memory-bandwidth probe of the decode ceiling (bandwidth_probe/bandwidth_probe.c; for the
prebuilt engine, which runs on this host, with the host's compiler)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mnnrepro.build import BuildError
from mnnrepro.build.cmake import compiler, configure_command, platform_args, run_logged
from mnnrepro.files import file_table, sha256_file

GATE_TOOL_SOURCE = Path(__file__).with_name("greedy_tool")
LLAMA_GATE_TOOL_SOURCE = Path(__file__).with_name("llama_gate_tool")
GATE_COMMON = Path(__file__).with_name("gate_common")  # what both gate tools include
PROBE_SOURCE = Path(__file__).with_name("bandwidth_probe")


def build_tool(
    source: Path,
    name: str,
    record: dict,
    cache: dict,
    build_dir: str,
    out_dir: str,
    log_file,
    language: str = "CXX",
    toolchain=platform_args,
    shared: Path | None = None,
) -> dict:
    """Configure and build the CMake project at source for the platform of the engine that
    record describes (a prebuilt engine: this host) with that engine's toolchain arguments,
    and copy its program `name` to out_dir. shared: a directory of sources it includes (its
    files are recorded with the tool's own)."""
    ndk = (record.get("ndk") or {}).get("path")
    cmd = configure_command(
        str(source), build_dir, cache, toolchain(record.get("platform", "host"), ndk)
    )
    run_logged(cmd, log_file)
    run_logged(["cmake", "--build", str(build_dir)], log_file)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(build_dir, name), out / name)
    return {
        "tool": name,
        "engine": record["engine"],
        "platform": record.get("platform", "host"),
        "source_sha256": {
            p.name: sha256_file(p)
            for p in sorted([*source.iterdir(), *(shared.iterdir() if shared else [])])
            if p.is_file()
        },
        "compiler": compiler(build_dir, language),
        "cmake_command": cmd,
        "files": file_table(out),
    }


def build_gate_tool(
    record: dict, source: dict, engine_dir: str, build_dir: str, out_dir: str, log_file
) -> dict:
    """Build mnn_greedy (the correctness gate's token-id tool) for one built engine: the same
    platform arguments and compiler launcher, MNN's headers, that engine's own libraries."""
    libs = sorted(str(p.resolve()) for p in Path(engine_dir).glob("*.so"))
    if not libs:
        raise BuildError(f"{engine_dir}: no shared library to link the gate tool against")
    cache = {"MNN_SOURCE": source["path"], "MNN_LIBS": ";".join(libs)}
    built = build_tool(
        GATE_TOOL_SOURCE,
        "mnn_greedy",
        record,
        cache,
        build_dir,
        out_dir,
        log_file,
        shared=GATE_COMMON,
    )
    return {**built, "linked": [Path(lib).name for lib in libs]}


def build_llama_gate_tool(
    record: dict, source: dict, engine_dir: str, build_dir: str, out_dir: str, log_file
) -> dict:
    """Build llama_greedy for one llama.cpp engine: its toolchain (clang-16 for linux-arm64),
    the tree's headers, that engine's own libllama and ggml libraries."""
    from mnnrepro.build.llamacpp import cross_args

    libs = sorted(str(p.resolve()) for p in Path(engine_dir).glob("*.so"))
    if not any(Path(lib).name == "libllama.so" for lib in libs):
        raise BuildError(f"{engine_dir}: no libllama.so to link the gate tool against")
    cache = {"LLAMA_SOURCE": source["path"], "LLAMA_LIBS": ";".join(libs)}
    built = build_tool(
        LLAMA_GATE_TOOL_SOURCE,
        "llama_greedy",
        record,
        cache,
        build_dir,
        out_dir,
        log_file,
        toolchain=cross_args,
        shared=GATE_COMMON,
    )
    return {**built, "linked": [Path(lib).name for lib in libs]}


def build_bandwidth_probe(record: dict, build_dir: str, out_dir: str, log_file) -> dict:
    """Build bandwidth_probe for the platform of one engine (built or prebuilt)."""
    return build_tool(
        PROBE_SOURCE, "bandwidth_probe", record, {}, build_dir, out_dir, log_file, language="C"
    )
