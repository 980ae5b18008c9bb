"""ONNX Runtime GenAI's C API runner, ort_genai_tool (`runner: c-api`, what a phone without
Python runs): its sources (gate_tool/), their digest in an engine's identity, and its build
against one engine's own libonnxruntime-genai.so."""

from __future__ import annotations

from pathlib import Path

from mnnrepro.files import sha256_file
from mnnrepro.toolchain import BuildError
from mnnrepro.toolchain.tools import GATE_COMMON, build_tool, ndk_path, tool_source_digests

TOOL = "ort_genai_tool"  # the program, in the engine's gate-tool directory
TOOL_SOURCE = Path(__file__).with_name("gate_tool")


def tool_sources() -> dict[str, str]:
    """The sha256 of ort_genai_tool's sources (and the gate code it includes)."""
    return tool_source_digests(TOOL_SOURCE)


def build_c_api_runner(
    record: dict, library: Path, build_dir: str, out_dir: str, log_file, header: Path | None
) -> dict:
    """Build ort_genai_tool for one ONNX Runtime GenAI engine: its platform's toolchain, linked
    against the engine's own libonnxruntime-genai.so (its C API functions declared by the
    tool), its declarations checked against the version's own C header where the engine's
    archive ships one (`header`: an AAR's, unpacked beside its libraries)."""
    if not library.is_file():
        raise BuildError(f"{library}: no libonnxruntime-genai.so to link {TOOL} against")
    cache = {"GENAI_LIBS": str(library.resolve())}
    if header is not None:
        cache["GENAI_HEADER"] = str(header.resolve())
    platform, ndk = record.platform, ndk_path(record)
    built = build_tool(
        TOOL_SOURCE, TOOL, platform, ndk, cache, build_dir, out_dir, log_file, shared=GATE_COMMON
    )
    checked = {"header": {header.name: sha256_file(header)}} if header is not None else {}
    return {**built, "engine": record.name, "linked": [library.name], **checked}
