"""The prebuilt kind: MNN's PyPI wheel, run through the Python runner (engines/runner/,
staged by the push as the receipt's `runner`; it needs a Python on the device),
which holds the timing loop and the greedy / teacher-forced gate."""

from __future__ import annotations

import glob
import json
from importlib import metadata
from pathlib import Path

from mnnrepro.config import SME2_SETTINGS
from mnnrepro.engines.base import EngineKind, GreedyAsk
from mnnrepro.engines.device_io import command_record, crashed_answer, fetch_text, files_of
from mnnrepro.engines.runner import RUNNER_DIR
from mnnrepro.engines.timers import RUNNER_STEPS, Timers
from mnnrepro.files import sha256_file
from mnnrepro.sections import Bench
from mnnrepro.toolchain.records import EngineError, settings_read_by

# MNN's thread pool (source/backend/cpu/ThreadPool.cpp): its members (enqueue polls until every
# worker is done) and a worker thread's loop (polling its task flags, yielding); the tasks are
# other functions
MNN_THREAD_POOL = r"^_ZN3MNN10ThreadPool|ThreadPoolC4EiEUlvE_"
# the runtime keys MNN's config.json (the runner) and llm_bench's flags (a build) take
MNN_RUNTIME_KEYS = ("thread_num", "precision", "memory", "power", "backend_type", *SME2_SETTINGS)


class PrebuiltEngine(EngineKind):
    kind = "prebuilt"
    config_key = "prebuilt"
    integer_env = ("MNN_CPU_TARGET",)
    record_name = "engine.json"
    runs_through_runner = True
    # engines/runner/runner_timing.time_phases: a clock around argmax(llm.forward(ids)), the
    # prompt at once, then each token fed its predecessor's pick
    timers = Timers(
        prefill=RUNNER_STEPS,
        decode=RUNNER_STEPS,
        source="engines/runner/runner_timing.py: time_phases",
    )
    runner_program = RUNNER_DIR / "python_runner.py"
    # its timing loop, and the vision phase's entries it writes
    runner_modules = (RUNNER_DIR / "runner_timing.py", RUNNER_DIR / "vision_entries.py")
    takes_images = True  # the runner's image questions (python_runner.py)
    no_test_suite = "the PyPI wheel ships no test suite"
    waiting_functions = MNN_THREAD_POOL
    runtime_keys = MNN_RUNTIME_KEYS
    sme2_vector_lengths_bits = (512,)  # the wheel's SME2 kernels are MNN's (mnn_source/kind.py)
    runner_engine = "mnn"  # the runner's --engine

    def __init__(self, record: dict, receipt: dict):
        self.record, self.runner = record, receipt["runner"]

    @classmethod
    def describe(cls, name: str, spec: dict) -> dict:
        return describe_prebuilt(name, spec[cls.config_key]["pypi"])

    @classmethod
    def identity(cls, record: dict) -> dict:
        return {
            "kind": record.as_written["kind"],
            "pin": record.as_written.get("pin"),
            "files": files_of(record),
        }

    @classmethod
    def device_files(cls, record: dict, receipt: dict) -> dict[str, str]:
        return {}  # the wheel lives in the device's Python; the runner is staging's

    @classmethod
    def profiled_libraries(cls, record: dict, built_dir: str, device) -> dict[str, str]:
        """The wheel's engine library in the device's Python (Device.site_dirs)."""
        found = sorted({p for d in device.site_dirs() for p in glob.glob(f"{d}/_mnncengine*.so")})
        return {Path(p).name: p for p in found}

    def bench_command(
        self, device, model_config: str, runtime: dict, bench: Bench, out: str
    ) -> tuple[list[str], dict]:
        argv = [
            *self.runner_argv(device, "bench"),
            "--config",
            model_config,
            "--runtime",
            json.dumps(runtime, sort_keys=True),
            "--out",
            out,
            "--prompt-tokens",
            str(bench.prompt_tokens),
            "--generate-tokens",
            str(bench.generate_tokens),
            "--warmup",
            str(bench.warmup),
        ]
        vision = bench.vision_set  # staged images: the vision phase (runs/benchmark.py)
        if vision:
            images = [i["device_path"] for i in vision["images"]]
            argv += ["--images", json.dumps(images), "--image-text", vision["text"]]
        return argv, self.runner_env()

    def phases_command(self, device, model: str, runtime: dict, phases: list, marker: str, out):
        """The runner's `phases` mode: loaded once, warmed up, each phase between markers."""
        argv = [
            *self.runner_argv(device, "phases"),
            *("--config", model, "--out", out, "--marker", marker),
            *("--runtime", json.dumps(runtime, sort_keys=True)),
            *("--phases", json.dumps(phases)),
        ]
        return argv, self.runner_env()

    def runner_argv(self, device, mode: str) -> list[str]:
        """The runner in `mode` for this kind's engine, on the device's Python."""
        return [device.python(), self.runner, mode, "--engine", self.runner_engine]

    def runner_env(self) -> dict:
        """What the runner's environment needs beside the variant's own (env)."""
        return {}

    def read_bench(self, device, result, out: str) -> dict:
        return json.loads(fetch_text(device, out))

    def greedy(self, device, receipt: dict, ask: GreedyAsk) -> dict:
        """The runner's greedy mode, one process per prompt however it is fed (its own answer
        and each teacher-forced one: a crash is its prompt's), with the runtime its benchmark
        mode applies (llm.set_config(runtime) in both); ask.forced: see the runner."""
        runtime = ask.runtime
        out = device.scratch("greedy.json")
        payload, answers = None, [{}] * len(ask.prompts)
        asked: dict[str, list[int]] = {}  # prompt -> where it is in ask.prompts
        for i, prompt in enumerate(ask.prompts):
            asked.setdefault(prompt, []).append(i)
        for prompt, where in asked.items():
            argv = [
                *self.runner_argv(device, "greedy"),
                "--config",
                self.model_path(receipt),
                "--runtime",
                json.dumps(runtime, sort_keys=True),
                "--out",
                out,
                "--prompts",
                json.dumps([prompt] * len(where), ensure_ascii=False),
                "--max-new-tokens",
                str(ask.max_new_tokens),
            ]
            if ask.forced is not None:
                argv += ["--forced", json.dumps([ask.forced[i] for i in where])]
            env = {**(ask.env or {}), **self.runner_env()}
            result = device.run(argv, timeout=ask.timeout, env=env or None)
            command = command_record(argv, env, result)
            if result.ok:
                payload = json.loads(fetch_text(device, out))
                for i, answer in zip(where, payload["answers"], strict=True):
                    answers[i] = {**answer, "command": command}
            else:
                crashed = crashed_answer(device, prompt, argv, result)
                for i in where:
                    answers[i] = {**crashed, "command": command}
        payload = payload or {"kind": "greedy", "runtime": runtime, "engine": {}}
        return {**payload, "env": ask.env or {}, "answers": answers}


def describe_prebuilt(name: str, pin: str) -> dict:
    """Check that the installed `mnn` wheel is the pinned one and hash its native libraries.

    Nothing is installed at run time: a mismatch is an error telling how to fix the install.
    """
    wanted = pin.split("==", 1)[1]
    try:
        installed = metadata.version("mnn")
    except metadata.PackageNotFoundError as err:
        raise EngineError(
            f"config key `engines.{name}.prebuilt.pypi` asks for {pin}, but `mnn` is not "
            f"installed; install it with: pip install '{pin}'"
        ) from err
    if installed != wanted:
        raise EngineError(
            f"config key `engines.{name}.prebuilt.pypi` asks for {pin}, but mnn {installed} is "
            f"installed; install the pinned version with: pip install '{pin}'"
        )
    dist = metadata.distribution("mnn")
    natives = sorted(str(f) for f in dist.files or [] if str(f).endswith(".so") or ".so." in str(f))
    return {
        "engine": name,
        "kind": PrebuiltEngine.kind,
        "pin": pin,
        "version": installed,
        "reads_settings": settings_read_by(Path(dist.locate_file(rel)) for rel in natives),
        "files": [
            {"path": rel, "sha256": sha256_file(Path(dist.locate_file(rel)))} for rel in natives
        ],
    }
