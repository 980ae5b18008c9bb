"""Small programs built with an engine's own toolchain arguments: the correctness gate's
token-id tool and the vision phase's timing (greedy_tool/, against the engine's headers and
libraries), the memory-bandwidth probe of the decode ceiling (bandwidth_probe/bandwidth_probe.c;
for the prebuilt engine, which runs on this host, with the host's compiler)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mnnrepro.files import file_table, sha256_file
from mnnrepro.toolchain import BuildError
from mnnrepro.toolchain.cmake import compiler, configure_command, platform_args, run_logged
from mnnrepro.toolchain.llamacpp import cross_args

GATE_TOOL_SOURCE = Path(__file__).with_name("greedy_tool")
LLAMA_GATE_TOOL_SOURCE = Path(__file__).with_name("llama_gate_tool")
ORT_GENAI_TOOL_SOURCE = Path(__file__).with_name("ort_genai_tool")
GATE_COMMON = Path(__file__).with_name("gate_common")  # what both gate tools include
PROBE_SOURCE = Path(__file__).with_name("bandwidth_probe")
MNN_VISION_TOOL = "mnn_vision"  # the vision phase's timing, built beside mnn_greedy


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
    also: tuple[str, ...] = (),
) -> dict:
    """Configure and build the CMake project at source for the platform of the engine that
    record describes (a prebuilt engine: this host) with that engine's toolchain arguments,
    and copy its program `name` (and the programs `also` names) to out_dir. shared: a directory
    of sources it includes (its files are recorded with the tool's own)."""
    ndk = (record.get("ndk") or {}).get("path")
    cmd = configure_command(
        str(source), build_dir, cache, toolchain(record.get("platform", "host"), ndk)
    )
    run_logged(cmd, log_file)
    run_logged(["cmake", "--build", str(build_dir)], log_file)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for program in (name, *also):
        shutil.copy2(Path(build_dir, program), out / program)
    return {
        "tool": name,
        **({"also": list(also)} if also else {}),
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


def _gate_tool(
    tool_source: Path,
    name: str,
    prefix: str,
    needed: str | None,
    record: dict,
    source: dict,
    engine_dir: str,
    build_dir: str,
    out_dir: str,
    log_file,
    toolchain=platform_args,
    also: tuple[str, ...] = (),
) -> dict:
    """Build a gate tool against one engine: its source tree's headers (-D<prefix>_SOURCE), the
    engine's own shared libraries (-D<prefix>_LIBS; `needed` among them, or any), its
    toolchain."""
    libs = sorted(str(p.resolve()) for p in Path(engine_dir).glob("*.so"))
    if not any(needed in (None, Path(lib).name) for lib in libs):
        what = needed or "shared library"
        raise BuildError(f"{engine_dir}: no {what} to link the gate tool against")
    cache = {f"{prefix}_SOURCE": source["path"], f"{prefix}_LIBS": ";".join(libs)}
    built = build_tool(
        tool_source,
        name,
        record,
        cache,
        build_dir,
        out_dir,
        log_file,
        toolchain=toolchain,
        shared=GATE_COMMON,
        also=also,
    )
    return {**built, "linked": [Path(lib).name for lib in libs]}


def build_gate_tool(
    record: dict, source: dict, engine_dir: str, build_dir: str, out_dir: str, log_file
) -> dict:
    """Build mnn_greedy (the correctness gate's token-id tool) and mnn_vision (the vision
    phase's timing) for one built engine: the same platform arguments and compiler launcher,
    MNN's headers, that engine's own libraries."""
    return _gate_tool(
        GATE_TOOL_SOURCE, "mnn_greedy", "MNN", None,
        record, source, engine_dir, build_dir, out_dir, log_file, also=(MNN_VISION_TOOL,),
    )  # fmt: skip


def build_llama_gate_tool(
    record: dict, source: dict, engine_dir: str, build_dir: str, out_dir: str, log_file
) -> dict:
    """Build llama_greedy for one llama.cpp engine: its toolchain (clang-16 for linux-arm64),
    the tree's headers, that engine's own libllama and ggml libraries."""
    return _gate_tool(
        LLAMA_GATE_TOOL_SOURCE, "llama_greedy", "LLAMA", "libllama.so",
        record, source, engine_dir, build_dir, out_dir, log_file, toolchain=cross_args,
    )  # fmt: skip


def build_ort_genai_tool(
    record: dict, library: Path, build_dir: str, out_dir: str, log_file, header: Path | None
) -> dict:
    """Build ort_genai_tool for one ONNX Runtime GenAI engine (`runner: c-api`): its platform's
    toolchain, linked against the engine's own libonnxruntime-genai.so (its C API functions
    declared by the tool), its declarations checked against the version's own C header where
    the engine's archive ships one (`header`: an AAR's, unpacked beside its libraries)."""
    if not library.is_file():
        raise BuildError(f"{library}: no libonnxruntime-genai.so to link ort_genai_tool against")
    cache = {"GENAI_LIBS": str(library.resolve())}
    if header is not None:
        cache["GENAI_HEADER"] = str(header.resolve())
    built = build_tool(
        ORT_GENAI_TOOL_SOURCE, "ort_genai_tool", record, cache, build_dir, out_dir, log_file,
        shared=GATE_COMMON,
    )  # fmt: skip
    checked = {"header": {header.name: sha256_file(header)}} if header is not None else {}
    return {**built, "linked": [library.name], **checked}


def build_bandwidth_probe(record: dict, build_dir: str, out_dir: str, log_file) -> dict:
    """Build bandwidth_probe for the platform of one engine (built or prebuilt)."""
    return build_tool(
        PROBE_SOURCE, "bandwidth_probe", record, {}, build_dir, out_dir, log_file, language="C"
    )
