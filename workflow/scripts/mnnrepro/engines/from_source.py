"""What the kinds built here from a pinned source tree share (BuiltFromSource)."""

from __future__ import annotations

from pathlib import Path

from mnnrepro.engines.base import EngineKind, GreedyAsk
from mnnrepro.engines.device_io import files_of, greedy_payload, staged_files, tool_answers
from mnnrepro.toolchain.kernels import can_have_sme2
from mnnrepro.toolchain.source import release_text
from mnnrepro.toolchain.tools import GateTool, build_gate_tool


class BuiltFromSource(EngineKind):
    """What the kinds built here share: build.json, a directory of files staged on the device
    under the engine's key and run with LD_LIBRARY_PATH set to it alone, and SME2 only where
    the build's architecture has it."""

    record_name = "build.json"
    from_source = True
    stages_files = True
    gate_tool: GateTool  # its correctness gate's token-id tool

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.gate_tool_source = cls.gate_tool.source  # what the plan hashes (registry)

    @classmethod
    def build_gate_tool(cls, record, source, engine_dir, build_dir, out_dir, log_file) -> dict:
        return build_gate_tool(
            cls.gate_tool, record, source, engine_dir, build_dir, out_dir, log_file
        )

    def __init__(self, record: dict, receipt: dict):
        self.record = record
        self.dir = receipt["engines"][record.name]

    @classmethod
    def provenance(cls, record) -> str:
        return f"{super().provenance(record)}, source {release_text(record.as_written['source'])}"

    @classmethod
    def provide_source(cls, tree: dict, cache) -> dict:
        """The kind's source tree (its `<config_section>` config: source, kleidiai, patches)
        in the cache directory, verified; returns the receipt every build of it reads."""
        raise NotImplementedError

    @classmethod
    def identity(cls, record: dict) -> dict:
        """What a kept measurement of this build stays valid for: what went into it (kind,
        platform, flags, commit, a dirty tree) and the files it made, not when it was built."""
        source = record.as_written.get("source", {})
        return {
            "kind": cls.kind,
            "platform": record.platform,
            "flags": record.as_written.get("flags", {}),
            "commit": source.get("commit"),
            "dirty": source.get("dirty", False),
            "files": files_of(record),
            **cls.source_identity(source),
        }

    @classmethod
    def source_identity(cls, source: dict) -> dict:
        """What else of its source tree a kind's builds are measured against."""
        return {}

    @classmethod
    def device_files(cls, record: dict, receipt: dict) -> dict[str, str]:
        return staged_files(record, receipt)

    @classmethod
    def sme2_impossible(cls, record: dict) -> bool:
        return not can_have_sme2(record.target_arch)

    @classmethod
    def profiled_libraries(cls, record: dict, built_dir: str, device) -> dict[str, str]:
        # the files the workflow built (the device runs the same bytes, staged by hash)
        return {
            Path(f["path"]).name: str(Path(built_dir) / f["path"])
            for f in record.files
            if ".so" in Path(f["path"]).name
        }

    def tool_greedy(self, device, ask: GreedyAsk, argv_of, engine_of) -> dict:
        """The gate tool's answers (tool_answers) with this engine's libraries: argv_of gives
        its command line, engine_of(first successful run) what it says of the engine."""
        run_env = {**(ask.env or {}), **self.library_env()}
        answers, first = tool_answers(
            device, ask.prompts, ask.forced, argv_of, run_env, ask.timeout
        )
        return {**greedy_payload(ask, answers, engine_of(first)), "unit": "token ids"}

    def library_env(self) -> dict:
        return {"LD_LIBRARY_PATH": self.dir}
