"""The ONNX Runtime GenAI kind, the third stack: onnxruntime and onnxruntime-genai's pinned
PyPI wheels for one platform, or for a phone the arm64 libraries of their Android archives
(fetched and unpacked by the rule fetch_engine_archives: fetch.py beside this), staged on the device
by hash and run there by the Python runner (runner/python_runner.py, `--engine ort-genai`,
through genai's Python API) or by ort_genai_tool (c_api_runner.py), on the model genai's own
builder converted (onnx_genai.py).

KleidiAI's kernels are chosen at run time by ONNX Runtime's MLAS; the session option
`mlas.disable_kleidiai` "1" (a variant's `runtime.session_options`) turns all of them off in
the same library, SME2 and KleidiAI's NEON kernels alike, and MLAS's own NEON kernels run
instead. The library is stripped: its KleidiAI kernels are named for the profiles from its
kernel tables (devices/stripped.py).

With `runner: c-api` the device needs no Python: ort_genai_tool (engines/ort_genai/gate_tool),
built for the platform against the wheel's libonnxruntime-genai.so by the gate-tool rule,
answers the gate and times the benchmark through genai's C API, as it would on a phone, by the
same definitions as the Python runner (prompt, context, argmax fed back)."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from mnnrepro.engines.base import GreedyAsk
from mnnrepro.engines.device_io import (
    GATE_TOP_K,
    files_of,
    greedy_payload,
    staged_files,
    tool_answers,
    tool_bench,
    tool_engine,
)
from mnnrepro.engines.mnn_wheel.kind import PrebuiltEngine
from mnnrepro.engines.ort_genai.c_api_runner import (
    TOOL,
    TOOL_SOURCE,
    build_c_api_runner,
    tool_sources,
)
from mnnrepro.engines.ort_genai.fetch import (
    KIND,
    SWITCH,
    fetch_ort_genai,
    genai_header,
    genai_library,
    section_of,
)
from mnnrepro.engines.runner import RUNNER_DIR
from mnnrepro.engines.timers import RUNNER_STEPS, Timers
from mnnrepro.models.spec import checkpoint_problems
from mnnrepro.sections import Bench

MODEL_FORMAT = "onnx"  # results/models/<model>/onnx: genai's model directory


def runner_of(spec_or_record) -> str:
    """python (the Python runner, genai's Python API) or c-api (ort_genai_tool): an engine
    entry's `ort_genai.runner`, or a wheels record's `runner`."""
    written = getattr(spec_or_record, "as_written", spec_or_record)  # an EngineRecord's, as read
    own = written.get(OrtGenaiEngine.config_key, written)
    return own.get("runner", "python")


def overlay(runtime: dict) -> str:
    """genai's config overlay for a variant's runtime: its threads and session options, as
    genai_llm.GenaiLlm passes them."""
    options = {"intra_op_num_threads": int(runtime.get("thread_num", 4))}
    options.update(runtime.get("session_options", {}))
    return json.dumps({"model": {"decoder": {"session_options": options}}}, sort_keys=True)


class OrtGenaiEngine(PrebuiltEngine):
    kind = KIND
    title = "ONNX Runtime GenAI"
    config_key = "ort_genai"
    config_section = "ort_genai"  # the pinned archives, per platform
    record_name = "wheels.json"
    model_format = MODEL_FORMAT
    # as the MNN wheel's runner (genai_llm's forward: append_tokens, get_logits), and the C API
    # runner the same way (its time_phases: AppendTokens, GetLogits, then its argmax)
    timers = Timers(
        prefill=RUNNER_STEPS,
        decode=RUNNER_STEPS,
        source="engines/runner/runner_timing.py: time_phases; "
        "engines/ort_genai/gate_tool/ort_genai_tool.cpp: time_phases",
    )
    stages_files = True
    fetches_archives = True
    integer_env = ()
    takes_images = False
    runtime_keys = ("thread_num", "session_options")
    sme2_vector_lengths_bits = ()  # KleidiAI's SME2 kernels are vector-length agnostic
    sme_switch = SWITCH
    switch_off = "1"  # the switch's value in the baseline: KleidiAI off
    sme_kernels_are = "SME2 kernels named in its library's kernel tables"
    switch_turns_off = "all of KleidiAI's kernels, SME2 and NEON: MLAS's own NEON kernels run"
    runner_engine = "ort-genai"
    gate_tool_source = TOOL_SOURCE
    # genai behind the calls the runner makes of MNN's Llm
    runner_modules = (*PrebuiltEngine.runner_modules, RUNNER_DIR / "genai_llm.py")
    no_test_suite = "the PyPI wheels ship no test suite"
    waiting_functions = ""  # ONNX Runtime's thread pool is not named: the library is stripped

    def __init__(self, record: dict, receipt: dict):
        super().__init__(record, receipt)
        self.dir = receipt["engines"][record.name]
        self.tool_dir = receipt.get("gate_tools", {}).get(record.name)

    @classmethod
    def builds_gate_tool(cls, spec: dict) -> bool:
        return runner_of(spec) == "c-api"

    @classmethod
    def through_runner(cls, record: dict) -> bool:
        return runner_of(record) == "python"

    @classmethod
    def build_gate_tool(cls, record, source, engine_dir, build_dir, out_dir, log_file) -> dict:
        library, header = Path(engine_dir) / genai_library(record), genai_header(engine_dir)
        return build_c_api_runner(record, library, build_dir, out_dir, log_file, header)

    @classmethod
    def platform(cls, spec: dict) -> str:
        return spec[cls.config_key]["platform"]

    @classmethod
    def archive_pins(cls, spec: dict, section: dict) -> list[dict] | dict:
        """Its platform's pins: `ort_genai.wheels.<platform>`, or `ort_genai.aars.<platform>`
        for Android."""
        platform = cls.platform(spec)
        return section[section_of(platform)][platform]

    @classmethod
    def downloads(cls, spec: dict, section: dict) -> list[tuple[str, str]]:
        archives = len(cls.archive_pins(spec, section))  # wheels, or AARs and genai's wheel
        what = f"ONNX Runtime GenAI for {cls.platform(spec)} ({archives} pinned archives)"
        return [("fetch_engine_archives", what)]

    @classmethod
    def fetch(cls, platform: str, pins, cache: str, site: str) -> dict:
        return fetch_ort_genai(platform, pins, cache, site)

    @classmethod
    def archives_said(cls, platform: str, pins) -> str:
        if isinstance(pins, dict):  # the AARs, and the wheel whose model builder is taken
            what = f"{len(pins) - 1} AARs and genai's wheel (its model builder)"
            return f"{cls.title} for {platform} ({what}, sha256 pinned)"
        return super().archives_said(platform, pins)

    @classmethod
    def runner_name(cls, spec: dict) -> str:
        return runner_of(spec)

    @classmethod
    def host_tools(cls, section: dict, engines: dict[str, dict], keys: dict[str, str]) -> dict:
        """genai's model builder: the one in the first measured engine's unpacked wheels."""
        first = next(iter(engines), None)
        return {"builder_site": f"results/engines/{keys[first]}/bin" if first else []}

    @classmethod
    def config_problems(cls, engines: dict[str, dict], tree: dict, models: dict) -> list[str]:
        """A checkpoint for genai's builder; a phone (no Python) needs the C API runner."""
        problems = checkpoint_problems(models, engines, "ONNX Runtime GenAI", "genai's builder")
        return problems + [
            f"config key `engines.{name}.ort_genai.runner`: android-arm64 has no Python to run "
            "genai's Python API; give `runner: c-api` (ort_genai_tool, built with the NDK)"
            for name, spec in sorted(engines.items())
            if cls.platform(spec) == "android-arm64" and runner_of(spec) != "c-api"
        ]

    @classmethod
    def identity(cls, record: dict) -> dict:
        section = section_of(record.platform)
        return {
            "kind": cls.kind,
            "platform": record.platform,
            # its wheels or AARs
            section: sorted((w["file"], w["sha256"]) for w in record.as_written[section]),
            "files": files_of(record),
            # the C API tool times it: a kept measurement is valid for its sources (the
            # Python runner's are hashed by variant_specs; its identity is as before)
            **(
                {"runner": "c-api", "tool_sources": tool_sources()}
                if runner_of(record) == "c-api"
                else {}
            ),
        }

    @classmethod
    def device_files(cls, record: dict, receipt: dict) -> dict[str, str]:
        return staged_files(record, receipt)

    @classmethod
    def switch_value(cls, variant) -> str | None:
        return variant.runtime.get("session_options", {}).get(cls.sme_switch)

    @classmethod
    def needs_sme2(cls, record: dict) -> bool:
        return bool(record.as_written["library"]["sme2_kernels"])

    @classmethod
    def sme2_impossible(cls, record: dict) -> bool:
        return not record.as_written["library"]["sme2_kernels"]  # the x86-64 wheel has no KleidiAI

    @classmethod
    def sme_kernel_count(cls, record: dict) -> int:
        return len(record.as_written["library"]["sme2_kernels"])

    @classmethod
    def sme2_kernel_names(cls, record: dict) -> list[str]:
        """KleidiAI's SME2 kernels as a profile names them (devices/stripped.py): each one's
        run function and its assembly body."""
        kernels = record.as_written["library"]["sme2_kernels"]
        return sorted(kernels + ["kai_kernel_" + k.removeprefix("kai_run_") for k in kernels])

    @classmethod
    def profiled_libraries(cls, record: dict, built_dir: str, device) -> dict[str, str]:
        library = record.as_written["library"]["path"]
        return {Path(library).name: str(Path(built_dir) / library)}

    @classmethod
    def model_path(cls, receipt: dict) -> str:
        return receipt["models"][MODEL_FORMAT]

    def runner_env(self) -> dict:
        if runner_of(self.record) == "python":
            return {"PYTHONPATH": self.dir}  # the staged wheels
        # the tool links libonnxruntime-genai.so, which loads ONNX Runtime from ORT_LIB_PATH
        # (the wheel names it libonnxruntime.so.<version>, not the .so.1 genai looks for)
        genai = posixpath.dirname(posixpath.join(self.dir, genai_library(self.record)))
        onnxruntime = posixpath.join(self.dir, self.record.as_written["library"]["path"])
        return {"LD_LIBRARY_PATH": genai, "ORT_LIB_PATH": onnxruntime}

    def bench_command(self, device, model: str, runtime: dict, bench: Bench, out: str):
        if runner_of(self.record) == "python":
            return super().bench_command(device, model, runtime, bench, out)
        self.asked = (runtime, bench.prompt_tokens, bench.generate_tokens)
        argv = [posixpath.join(self.tool_dir, TOOL), "bench", model, overlay(runtime)]
        argv += [str(bench.prompt_tokens), str(bench.generate_tokens), str(bench.warmup)]
        return argv, self.runner_env()

    def phases_command(self, device, model: str, runtime: dict, phases: list, marker: str, out):
        if runner_of(self.record) == "python":  # ort_genai_tool runs a process per phase
            return super().phases_command(device, model, runtime, phases, marker, out)
        return None

    def read_bench(self, device, result, out: str) -> dict:
        if runner_of(self.record) == "python":
            return super().read_bench(device, result, out)
        return tool_bench(result, self.asked, TOOL, self.record.version)

    def greedy(self, device, receipt: dict, ask: GreedyAsk) -> dict:
        """The Python runner's greedy mode (PrebuiltEngine.greedy), or with `runner: c-api`
        ort_genai_tool's, one process per prompt either way."""
        if runner_of(self.record) == "python":
            return super().greedy(device, receipt, ask)
        runtime = ask.runtime
        tool = [posixpath.join(self.tool_dir, TOOL), "greedy", self.model_path(receipt)]

        def argv_of(prompt_path: str, out: str, forced_path: str | None) -> list[str]:
            argv = [*tool, overlay(runtime), prompt_path, str(ask.max_new_tokens), out]
            argv.append(str(GATE_TOP_K))
            return argv + ([forced_path] if forced_path else [])

        env = {**(ask.env or {}), **self.runner_env()}
        answers, first = tool_answers(device, ask.prompts, ask.forced, argv_of, env, ask.timeout)
        return greedy_payload(ask, answers, tool_engine(first, TOOL))
