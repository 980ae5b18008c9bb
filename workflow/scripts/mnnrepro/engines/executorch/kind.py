"""The ExecuTorch kind, the fourth stack: ExecuTorch's pinned PyPI wheel for one platform (its
runtime libraries and headers, fetched and unpacked by rule fetch_engine_archives: fetch.py
beside this), staged on the device by hash and run there by executorch_tool (gate_tool/), built
for the platform against them by the gate-tool rule, on the program ExecuTorch's own exporter
made of the same checkpoint (export.py: 8da4w, the XNNPACK delegate).

XNNPACK chooses its kernels at run time from what cpuinfo reads of the CPU (getauxval): on an
SME2 CPU its fp32 GEMMs are KleidiAI's SME2 kernels (its int4 ones stay NEON: export.py). It has no
run-time switch (its build-time one is XNNPACK_ENABLE_ARM_SME2): the pair is one binary, its
baseline with SME and SME2 hidden by the SME mask (a variant's `hide_sme`)."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from mnnrepro.engines.base import EngineKind, GreedyAsk
from mnnrepro.engines.device_io import (
    GATE_TOP_K,
    BenchError,
    fetch_text,
    files_of,
    greedy_payload,
    staged_files,
    tool_answers,
    tool_bench,
    tool_engine,
)
from mnnrepro.engines.executorch.fetch import (
    DELEGATE,
    KIND,
    PACKAGE,
    fetch_engine,
    wheel_identity,
)
from mnnrepro.engines.executorch.program import PROGRAM, PROMPTS
from mnnrepro.engines.timers import RUNNER_STEPS, Timers
from mnnrepro.models.spec import checkpoint_problems
from mnnrepro.sections import Bench
from mnnrepro.toolchain.tools import GATE_COMMON, build_tool, ndk_path, tool_source_digests

MODEL_FORMAT = "pte"  # results/models/<model>/pte: the program and the gate's prompts, encoded
TOOL = "executorch_tool"  # the program, in the engine's gate-tool directory
TOOL_SOURCE = Path(__file__).with_name("gate_tool")
EXPORTER_SITE = "resources/executorch/exporter"  # rule fetch_executorch_exporter's


def prompt_ids(prompts: list[str], encoded: dict[str, list[int]]) -> list[str]:
    """Each prompt's ids, as the export encoded them (one line of ids); a prompt the export did
    not encode is one line naming the key."""
    missing = [p for p in prompts if p not in encoded]
    if missing:
        raise BenchError(
            f"config key `correctness.prompts`: {missing} were not encoded when the model was "
            "exported (its prompts.json); export it again (rule convert_pte_model)"
        )
    return [" ".join(map(str, encoded[p])) for p in prompts]


class ExecutorchEngine(EngineKind):
    kind = KIND
    title = "ExecuTorch (XNNPACK)"
    config_key = "executorch"
    config_section = "executorch"  # the pinned wheels, per platform, and the exporter's
    record_name = "wheels.json"
    model_format = MODEL_FORMAT
    # executorch_tool's time_phases: Module::forward on the ids, the last logits read out of
    # the output tensor, then their argmax
    timers = Timers(
        prefill=RUNNER_STEPS,
        decode=RUNNER_STEPS,
        source="engines/executorch/gate_tool/executorch_tool.cpp: timePhases",
    )
    stages_files = True
    fetches_archives = True
    runtime_keys = ("thread_num",)
    sme2_vector_lengths_bits = ()  # KleidiAI's SME2 kernels are vector-length agnostic
    sme_kernels_are = "SME2 kernels its XNNPACK delegate's dynamic symbols name"
    switch_turns_off = "nothing: XNNPACK has no run-time switch (the SME mask hides SME2)"
    gate_tool_source = TOOL_SOURCE
    no_test_suite = "the PyPI wheel ships no test suite"

    def __init__(self, record: dict, receipt: dict):
        super().__init__(record, receipt)
        self.dir = receipt["engines"][record.name]
        self.tool_dir = receipt["gate_tools"][record.name]

    @classmethod
    def builds_gate_tool(cls, spec: dict) -> bool:
        return True  # executorch_tool runs it everywhere: the wheel's Python needs torch

    @classmethod
    def build_gate_tool(cls, record, source, engine_dir, build_dir, out_dir, log_file) -> dict:
        """executorch_tool for one engine: its platform's toolchain, against its libraries."""
        cache = {"EXECUTORCH_ROOT": str(Path(engine_dir).resolve())}
        platform, ndk = record.platform, ndk_path(record)
        built = build_tool(
            TOOL_SOURCE,
            TOOL,
            platform,
            ndk,
            cache,
            build_dir,
            out_dir,
            log_file,
            shared=GATE_COMMON,
        )
        return {**built, "engine": record.name, "linked": [f["path"] for f in record.files]}

    @classmethod
    def platform(cls, spec: dict) -> str:
        return spec[cls.config_key]["platform"]

    @classmethod
    def archive_pins(cls, spec: dict, section: dict) -> list[dict]:
        """Its platform's wheel: `executorch.wheels.<platform>`."""
        return section["wheels"][cls.platform(spec)]

    @classmethod
    def downloads(cls, spec: dict, section: dict) -> list[tuple[str, str]]:
        exporter = f"ExecuTorch's exporter ({len(section['exporter'])} pinned wheels)"
        return [
            ("fetch_engine_archives", f"ExecuTorch for {cls.platform(spec)} (1 pinned wheel)"),
            ("fetch_executorch_exporter", exporter),
        ]

    @classmethod
    def fetch(cls, platform: str, pins, cache: str, site: str) -> dict:
        return fetch_engine(platform, pins, cache, site)

    @classmethod
    def runner_name(cls, spec: dict) -> str:
        return TOOL

    @classmethod
    def host_tools(cls, section: dict, engines: dict[str, dict], keys: dict[str, str]) -> dict:
        """ExecuTorch's exporter, wherever an engine of the kind is measured: where it is
        unpacked, and its pins (rule fetch_executorch_exporter's)."""
        return {
            "executorch_exporter": EXPORTER_SITE if engines else [],
            "executorch_exporter_pins": section["exporter"] if engines else [],
        }

    @classmethod
    def config_problems(cls, engines: dict[str, dict], tree: dict, models: dict) -> list[str]:
        """A checkpoint for the exporter; its executorch the version every engine runs (a
        program must be one its runtime reads)."""
        problems = checkpoint_problems(models, engines, "ExecuTorch", "its exporter")
        if not engines:
            return problems
        exporter = wheel_identity(tree["exporter"][0]["url"], "executorch.exporter[0]")
        for name, spec in sorted(engines.items()):
            key = f"executorch.wheels.{cls.platform(spec)}"
            pins = cls.archive_pins(spec, tree)
            wheel = wheel_identity(pins[0]["url"], f"{key}[0]")
            if (wheel["name"], wheel["version"]) != (PACKAGE, exporter["version"]):
                problems.append(
                    f"config key `{key}`: engine {name} runs {wheel['name']} {wheel['version']}, "
                    f"but `executorch.exporter` exports with executorch {exporter['version']}: "
                    "pin the same version in both"
                )
        return problems

    @classmethod
    def identity(cls, record: dict) -> dict:
        return {
            "kind": cls.kind,
            "platform": record.platform,
            "wheels": sorted((w["file"], w["sha256"]) for w in record.as_written["wheels"]),
            "files": files_of(record),
            "tool_sources": tool_source_digests(TOOL_SOURCE),  # the tool times it
        }

    @classmethod
    def device_files(cls, record: dict, receipt: dict) -> dict[str, str]:
        return staged_files(record, receipt)

    @classmethod
    def needs_sme2(cls, record: dict) -> bool:
        return bool(record.as_written["delegate"]["sme2_kernels"])

    @classmethod
    def sme2_impossible(cls, record: dict) -> bool:
        return not record.as_written["delegate"]["sme2_kernels"]  # the x86-64 wheel's

    @classmethod
    def sme_kernel_count(cls, record: dict) -> int:
        return len(record.as_written["delegate"]["sme2_kernels"])

    @classmethod
    def sme2_kernel_names(cls, record: dict) -> list[str]:
        return list(record.as_written["delegate"]["sme2_kernels"])

    @classmethod
    def profiled_libraries(cls, record: dict, built_dir: str, device) -> dict[str, str]:
        return {Path(DELEGATE).name: str(Path(built_dir) / DELEGATE)}

    @classmethod
    def model_path(cls, receipt: dict) -> str:
        return posixpath.join(receipt["models"][MODEL_FORMAT], PROGRAM)

    def runner_env(self) -> dict:
        return {"LD_LIBRARY_PATH": posixpath.join(self.dir, "lib")}  # the staged libraries

    def tool(self) -> str:
        return posixpath.join(self.tool_dir, TOOL)

    def bench_command(self, device, model: str, runtime: dict, bench: Bench, out: str):
        self.asked = (runtime, bench.prompt_tokens, bench.generate_tokens)
        argv = [self.tool(), "bench", model, str(runtime["thread_num"])]
        argv += [str(bench.prompt_tokens), str(bench.generate_tokens), str(bench.warmup)]
        return argv, self.runner_env()

    def read_bench(self, device, result, out: str) -> dict:
        return tool_bench(result, self.asked, TOOL, self.record.version)

    def greedy(self, device, receipt: dict, ask: GreedyAsk) -> dict:
        """executorch_tool's greedy mode, one process per prompt, each prompt as the export
        encoded it in the chat template (prompts.json, read back from the device)."""
        folder = receipt["models"][MODEL_FORMAT]
        ids = prompt_ids(ask.prompts, json.loads(fetch_text(device, f"{folder}/{PROMPTS}")))
        threads = str(ask.runtime["thread_num"])

        def argv_of(prompt_path: str, out: str, forced_path: str | None) -> list[str]:
            argv = [self.tool(), "greedy", self.model_path(receipt), threads, prompt_path]
            argv += [str(ask.max_new_tokens), out, str(GATE_TOP_K)]
            return argv + ([forced_path] if forced_path else [])

        env = {**(ask.env or {}), **self.runner_env()}
        answers, first = tool_answers(device, ids, ask.forced, argv_of, env, ask.timeout)
        for answer, prompt in zip(answers, ask.prompts, strict=True):
            answer["prompt"] = prompt  # asked as its ids
        return greedy_payload(ask, answers, tool_engine(first, TOOL))
