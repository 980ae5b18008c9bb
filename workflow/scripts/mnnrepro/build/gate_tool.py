"""The correctness gate's token-id tool (greedy_tool/mnn_greedy.cpp), built for one engine with
the same platform arguments, against its headers and its own libraries.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mnnrepro.build import BuildError
from mnnrepro.build.cmake import compiler, configure_command, platform_args, run_logged
from mnnrepro.files import file_table, sha256_file

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
