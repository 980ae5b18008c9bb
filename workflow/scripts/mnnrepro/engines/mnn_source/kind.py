"""The MNN-from-source kind: MNN's own `llm_bench` from a build of ours, one configuration per
invocation (`-rep 1`; llm_bench drops its own first run), `-kv true` so prefill and decode are
split at release 3.6.1, `-j` JSON cross-checked against the Markdown table, run from a scratch
directory (it creates ./tmp) with LD_LIBRARY_PATH set to this engine's directory only; its
correctness gate runs `mnn_greedy`, a tool built against the same engine's libraries, which
writes token ids and top-k logits (llm_demo prints only text, which a model's tokens may not
even decode to)."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from mnnrepro.engines.base import GreedyAsk
from mnnrepro.engines.device_io import GATE_TOP_K, fetch_text
from mnnrepro.engines.from_source import BuiltFromSource
from mnnrepro.engines.mnn_source import build as mnn_build
from mnnrepro.engines.mnn_source import llmbench
from mnnrepro.engines.mnn_wheel.kind import MNN_RUNTIME_KEYS, MNN_THREAD_POOL
from mnnrepro.engines.timers import Timers
from mnnrepro.sections import Bench, EngineTests
from mnnrepro.toolchain import source, tools
from mnnrepro.toolchain.records import BuildJob

MNN_VISION_TOOL = "mnn_vision"  # the vision phase's timing, built beside mnn_greedy
# mnn_greedy (the correctness gate's token-id tool) and mnn_vision: the engine's platform
# arguments, MNN's headers, its own libraries
GATE_TOOL = tools.GateTool(
    Path(__file__).with_name("gate_tool"), "mnn_greedy", "MNN", also=(MNN_VISION_TOOL,)
)
LEVELS = {"normal": 0, "high": 1, "low": 2}  # llm_bench's -c, --memory and --power codes


def llm_bench_config(runtime: dict, prompt_tokens: int) -> dict:
    """Every config.json value llm_bench 3.6.1 sets on the engine (buildLLM in
    transformers/llm/engine/tools/llm_bench.cpp) for this runtime, its other options at their
    defaults. The gate's engine gets exactly these, so it runs the kernels that are timed."""
    return {
        **runtime,
        "async": False,
        "reuse_kv": False,
        "dynamic_option": 0 if 0 < prompt_tokens <= 300 else 8,  # -dyo 0, by prompt length
        "attention_mode": 8,  # -fa 1 (flash attention), -qatten 0
        "use_mmap": False,
        "tmp_path": "tmp",
        # -mr and -scn: the variant's, else llm_bench's defaults (it always sets both)
        "cpu_sme2_neon_division_ratio": runtime.get("cpu_sme2_neon_division_ratio", 41),
        "cpu_sme_core_num": runtime.get("cpu_sme_core_num", 2),
    }


class BuiltEngine(BuiltFromSource):
    kind = mnn_build.KIND
    # MNN's hand-written SME2 assembly (source/backend/cpu/arm/arm64/sme2_asm/, 3.2.2 to
    # 3.6.1) assumes a 512-bit streaming vector (`VG=512bit` comments, a fixed tile height,
    # `addvl` steps) and its CPU backend never reads the length: wrong answers at 128/256
    # bits and crashes at 1024/2048 under QEMU (benchmarks/results/real_mnn.md)
    sme2_vector_lengths_bits = (512,)
    config_key = "build"
    # MNN's llm_bench (transformers/llm/engine/tools/llm_bench.cpp) reads the context's
    # prefill_us and decode_us: prefill times forwardVec of the prompt's embeddings (computed
    # before the clock starts), decode each step's tokenizer_decode and forwardVec of the
    # token (its embedding inside), the sampler outside (src/llm.cpp, generate.cpp, 3.6.1)
    timers = Timers(
        prefill=("forward",),
        decode=("embedding", "forward", "detokenising"),
        source="MNN's transformers/llm/engine/src/llm.cpp (prefill_us), "
        "speculative_decoding/generate.cpp (decode_us)",
    )
    takes_images = True
    gate_tool = GATE_TOOL
    vision_tool = MNN_VISION_TOOL  # built beside mnn_greedy
    integer_env = ("MNN_CPU_TARGET",)
    config_section = "mnn"
    source_forms = "git + commit, path, or archive + sha256"
    no_test_suite = "built without MNN_BUILD_TEST"
    waiting_functions = MNN_THREAD_POOL
    runtime_keys = MNN_RUNTIME_KEYS

    @classmethod
    def test_suite(cls, record: dict) -> tuple[str | None, str]:
        """run_test.out, where the build has it (build.py: TEST_SUITE)."""
        return (
            (record.as_written["test_suite"], "")
            if record.as_written.get("test_suite")
            else (None, cls.no_test_suite)
        )

    @classmethod
    def suite_command(
        cls, engine_dir: str, suite: str, name: str, settings: EngineTests
    ) -> list[str]:
        """`run_test.out NAME 0 PRECISION THREADS` (backend 0: the CPU; the precision codes
        are llm_bench's)."""
        precision = str(LEVELS[settings.precision])
        return [posixpath.join(engine_dir, suite), name, "0", precision, str(settings.threads)]

    @classmethod
    def provide_source(cls, tree: dict, cache) -> dict:
        return source.provide_source(
            tree.get("source", {}), tree.get("kleidiai", {}), cache, tree.get("patches", [])
        )

    @classmethod
    def build(cls, job: BuildJob) -> dict:
        return mnn_build.build_engine(job, extra_flags=job.source.get("cmake_flags", {}))

    @classmethod
    def carries_sme2_kernels(cls, record: dict) -> bool:
        return True

    @classmethod
    def sme2_kernel_names(cls, record: dict) -> list[str]:
        return record.as_written.get("sme2", {}).get("sme2_kernels", [])

    @classmethod
    def needs_sme2(cls, record: dict) -> bool:
        return bool(cls.sme_kernel_count(record))

    @classmethod
    def sme_kernel_count(cls, record: dict) -> int:
        return record.as_written.get("sme2", {}).get("sme2_kernel_count", 0)  # MNN's own SME2

    def bench_command(
        self, device, model_config: str, runtime: dict, bench: Bench, out: str
    ) -> tuple[list[str], dict]:
        argv = llmbench.build_args(
            posixpath.join(self.dir, "llm_bench"),
            model_config,
            bench.prompt_tokens,
            bench.generate_tokens,
            runtime["thread_num"],
            LEVELS[runtime["precision"]],
            out,
        )
        argv += [
            "--memory",
            str(LEVELS[runtime["memory"]]),
            "--power",
            str(LEVELS[runtime["power"]]),
        ]
        argv += ["-a", runtime["backend_type"]]
        for key, flag in (("cpu_sme2_neon_division_ratio", "-mr"), ("cpu_sme_core_num", "-scn")):
            argv += [flag, str(runtime[key])] if key in runtime else []
        return argv, self.library_env()

    def greedy(self, device, receipt: dict, ask: GreedyAsk) -> dict:
        """mnn_greedy (built against this engine's own libraries) per prompt, with a greedy
        config written on the device (base_dir -> the model) that holds every setting
        llm_bench applies for the benchmark of P = ask.prompt_tokens: token ids, top-k logits
        (ask.forced: see mnn_greedy.cpp)."""
        tool = posixpath.join(receipt["gate_tools"][self.record.name], "mnn_greedy")
        config_path = self.engine_config(
            device,
            receipt,
            ask.runtime,
            ask.prompt_tokens,
            "config.greedy.json",
            ask.max_new_tokens,
        )

        def argv_of(prompt_path: str, out: str, forced_path: str | None) -> list[str]:
            argv = [tool, config_path, prompt_path, str(ask.max_new_tokens), out]
            return argv + ([str(GATE_TOP_K), forced_path] if forced_path else [])

        def engine_of(first) -> dict:
            printed = first.stdout if first else ""
            return {**engine_lines(printed, device), "tool": "mnn_greedy"}

        return self.tool_greedy(device, ask, argv_of, engine_of)

    def engine_config(
        self, device, receipt: dict, runtime: dict, prompt_tokens: int, name: str, max_new=1
    ) -> str:
        """A greedy config.json written on the device (base_dir -> the model) that holds every
        setting llm_bench applies for the benchmark of P = prompt_tokens; its path."""
        model_config = receipt["model_config"]
        original = json.loads(fetch_text(device, model_config))
        config_path = device.scratch(name)
        settings = llm_bench_config(runtime, prompt_tokens)
        config = greedy_config(original, posixpath.dirname(model_config), settings, max_new)
        device.put_text(json.dumps(config), config_path)
        return config_path

    def vision_command(self, device, receipt: dict, runtime: dict, bench: Bench, out: str):
        """mnn_vision (beside mnn_greedy) over the staged image set, the engine configured as
        llm_bench configures it for the text benchmark; llm_bench takes no images."""
        vision = bench.vision_set
        if not vision:
            return None
        config_path = self.engine_config(
            device, receipt, runtime, bench.prompt_tokens, "config.vision.json"
        )
        llm_config = posixpath.join(posixpath.dirname(receipt["model_config"]), "llm_config.json")
        image_pad = json.loads(fetch_text(device, llm_config))["image_pad"]
        images = device.scratch("vision-images.txt")
        device.put_text("".join(f"{i['device_path']}\n" for i in vision["images"]), images)
        tool = posixpath.join(receipt["gate_tools"][self.record.name], self.vision_tool)
        argv = [
            tool,
            config_path,
            images,
            vision["text"],
            str(image_pad),
            str(bench.warmup),
            out,
        ]
        return argv, self.library_env()

    def read_vision(self, device, result, out: str) -> dict:
        return json.loads(fetch_text(device, out))

    def read_bench(self, device, result, out: str) -> dict:
        with_text = fetch_text(device, out)
        table = llmbench.parse_table(result.stdout)
        rows = llmbench.parse_json(with_text)
        llmbench.cross_check(table, rows)
        return {
            "kind": "bench",
            "warmup": 1,  # llm_bench runs rep + 1 times and drops the first
            # what llm_bench says it ran (its table and JSON header), not what was asked
            "ran": llmbench.settings_ran(with_text),
            "results": [
                {
                    "phase": r["phase"],
                    "tokens": r["tokens"],
                    "seconds": r["tokens"] / r["tps"],
                    "tps": r["tps"],
                    # -kv true: decode runs right after the P-token prompt
                    "context_start": r["prompt_len"] if r["phase"] == "decode" else 0,
                }
                for r in rows
            ],
            "engine": {
                **engine_lines(result.stdout, device),
                "tool": "llm_bench",
                "version": self.record.version,
            },
            "llm_bench_stdout": result.stdout,
        }


def engine_lines(stdout: str, device) -> dict:
    """What the engine printed about the CPU: MNN's feature line, and with MNN_CPU_TARGET set
    (profiling builds) the features it left on, e.g. `... sme2=0` when SME2 is masked."""
    return {
        "device_supports": llmbench.supports_line(stdout) or device.engine_log_supports(),
        "cpu_target": next(
            (ln.strip() for ln in stdout.splitlines() if ln.startswith("MNN_CPU_TARGET=")), ""
        ),
    }


def greedy_config(model_config: dict, model_dir: str, settings: dict, max_new_tokens: int) -> dict:
    """The model's config.json (files found via base_dir), greedy, with the engine settings."""
    return {
        **model_config,
        **settings,
        "base_dir": model_dir.rstrip("/") + "/",
        "sampler_type": "greedy",
        "max_new_tokens": max_new_tokens,
    }
