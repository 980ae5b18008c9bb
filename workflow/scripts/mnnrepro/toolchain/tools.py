"""Small programs built with an engine's own toolchain arguments: a kind's gate tool (its
sources in the kind's package, engines/<kind>/gate_tool/, built against the engine's headers and
libraries with the gate code every tool includes, gate_common/), the memory-bandwidth probe of
the decode ceiling (bandwidth_probe/bandwidth_probe.c; for the prebuilt engine, which runs on
this host, with the host's compiler); and, per device platform, the SME mask a variant with
`hide_sme` preloads (sme_mask/sme_mask.c)."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mnnrepro.files import file_table, sha256_file
from mnnrepro.toolchain import BuildError
from mnnrepro.toolchain.cmake import compiler, configure_command, platform_args, run_logged

GATE_COMMON = Path(__file__).with_name("gate_common")  # what every kind's gate tool includes
PROBE_SOURCE = Path(__file__).with_name("bandwidth_probe")
MASK_SOURCE = Path(__file__).with_name("sme_mask")
MASK_LIBRARY = "libsme_mask.so"  # what the mask's build makes, preloaded by its variants


@functools.cache  # an identity is asked for every invocation's key; the sources are fixed
def tool_source_digests(source: Path) -> dict[str, str]:
    """The sha256 of a gate tool's sources (and of the gate code every tool includes): what a
    measurement timed by the tool depends on."""
    files = [*source.iterdir(), *GATE_COMMON.glob("*.hpp")]
    return {p.name: sha256_file(p) for p in sorted(files) if p.is_file()}


def build_tool(
    source: Path,
    name: str,
    platform: str,
    ndk: str | None,
    cache: dict,
    build_dir: str,
    out_dir: str,
    log_file,
    language: str = "CXX",
    toolchain=platform_args,
    shared: Path | None = None,
    also: tuple[str, ...] = (),
) -> dict:
    """Configure and build the CMake project at source for a platform (an engine's, `host` for
    a prebuilt engine; a device's for the mask) with that platform's toolchain arguments (ndk:
    the NDK's path, for android-arm64), and copy its program `name` (and the programs `also`
    names) to out_dir. shared: a directory of sources it includes (its files are recorded with
    the tool's own)."""
    if shared is not None:  # where its CMakeLists finds the shared code (-DGATE_COMMON)
        cache = {**cache, "GATE_COMMON": str(shared.resolve())}
    cmd = configure_command(str(source), build_dir, cache, toolchain(platform, ndk))
    run_logged(cmd, log_file)
    run_logged(["cmake", "--build", str(build_dir)], log_file)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for program in (name, *also):
        shutil.copy2(Path(build_dir, program), out / program)
    return {
        "tool": name,
        **({"also": list(also)} if also else {}),
        "platform": platform,
        "source_sha256": {
            p.name: sha256_file(p)
            for p in sorted([*source.iterdir(), *(shared.iterdir() if shared else [])])
            if p.is_file()
        },
        "compiler": compiler(build_dir, language),
        "cmake_command": cmd,
        "files": file_table(out),
    }


@dataclass(frozen=True)
class GateTool:
    """A from-source kind's gate tool: its sources, its program (and the programs built beside
    it), the prefix of its CMake inputs (-D<prefix>_SOURCE, -D<prefix>_LIBS), the library it
    must link (None: any of the engine's), and the kind's toolchain arguments."""

    source: Path
    program: str
    prefix: str
    needs: str | None = None
    also: tuple[str, ...] = ()
    toolchain: Callable = platform_args


def ndk_path(record) -> str | None:
    """Where the NDK an engine record's build used is (engines.registry.EngineRecord.ndk)."""
    return (record.ndk or {}).get("path")


def build_gate_tool(
    tool: GateTool,
    record,
    source: dict,
    engine_dir: str,
    build_dir: str,
    out_dir: str,
    log_file,
) -> dict:
    """Build a gate tool against one engine (record: its EngineRecord): its source tree's
    headers (-D<prefix>_SOURCE), the engine's own shared libraries (-D<prefix>_LIBS; `needs`
    among them, or any), its kind's toolchain."""
    libs = sorted(str(p.resolve()) for p in Path(engine_dir).glob("*.so"))
    if not any(tool.needs in (None, Path(lib).name) for lib in libs):
        what = tool.needs or "shared library"
        raise BuildError(f"{engine_dir}: no {what} to link the gate tool against")
    cache = {f"{tool.prefix}_SOURCE": source["path"], f"{tool.prefix}_LIBS": ";".join(libs)}
    built = build_tool(
        tool.source,
        tool.program,
        record.platform,
        ndk_path(record),
        cache,
        build_dir,
        out_dir,
        log_file,
        toolchain=tool.toolchain,
        shared=GATE_COMMON,
        also=tool.also,
    )
    return {**built, "engine": record.name, "linked": [Path(lib).name for lib in libs]}


def build_bandwidth_probe(record, build_dir: str, out_dir: str, log_file) -> dict:
    """Build bandwidth_probe for the platform of one engine (its EngineRecord; built or
    prebuilt)."""
    platform, ndk = record.platform, ndk_path(record)
    built = build_tool(
        PROBE_SOURCE, "bandwidth_probe", platform, ndk, {}, build_dir, out_dir, log_file, "C"
    )
    return {**built, "engine": record.name}


def build_sme_mask(platform: str, ndk: dict | None, build_dir: str, out_dir: str, log_file):
    """Build the SME mask (MASK_LIBRARY) for a device platform: Debian's cross compiler for
    linux-arm64, the pinned NDK (its receipt, ndk) for android-arm64, this host's compiler for
    the host (where it hides nothing: no SME off arm64)."""
    path = ndk["path"] if ndk else None
    return build_tool(
        MASK_SOURCE, MASK_LIBRARY, platform, path, {}, build_dir, out_dir, log_file, "C"
    )
