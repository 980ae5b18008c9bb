"""The llama.cpp kind, the control engine: `llama-bench` of a build of ours on the GGUF model
(Q4_0, the type KleidiAI's kernels take), one invocation per repetition (`-r 1`, llama-bench's
own warm-up run first), its JSON output (`-o json`) parsed into the same raw records as MNN's;
its correctness gate runs `llama_greedy`, built against the same engine's libllama.

One invocation runs `-p P -n N -d 0,P`: llama-bench crosses depths with tests, so it measures
prefill of P tokens at depth 0 (the MNN path's prefill) and decode of N tokens after a P-token
context (the MNN path's decode, `-kv true`), plus the two other combinations, which the raw
record keeps and the analysis does not use.

KleidiAI's SME kernels are chosen at run time; `GGML_KLEIDIAI_SME=0` turns them off in the same
binary. ggml logs the choice (`kleidiai: ...` lines on stderr), which the records keep as the
engine's feature line.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from mnnrepro.config import canonical
from mnnrepro.engines.base import GreedyAsk
from mnnrepro.engines.device_io import GATE_TOP_K, BenchError
from mnnrepro.engines.from_source import BuiltFromSource
from mnnrepro.engines.llamacpp import build as llamacpp
from mnnrepro.engines.timers import Timers
from mnnrepro.models.spec import checkpoint_problems
from mnnrepro.sections import Bench
from mnnrepro.toolchain import tools
from mnnrepro.toolchain.records import BuildJob, receipt_of

# llama_greedy: the engine's toolchain (clang-16 for linux-arm64), the tree's headers, its own
# libllama and ggml libraries
GATE_TOOL = tools.GateTool(
    Path(__file__).with_name("gate_tool"),
    "llama_greedy",
    "LLAMA",
    "libllama.so",
    toolchain=llamacpp.cross_args,
)
MODEL_FILE = "model.gguf"  # in results/models/<model>/gguf/
SME_SWITCH = "GGML_KLEIDIAI_SME"  # "0": KleidiAI's SME kernels off, the same binary
KLEIDIAI_LINE = "kleidiai:"
SYSTEM_INFO = "system_info:"  # llama_greedy prints llama_print_system_info() so


class LlamaBenchParseError(BenchError, ValueError):
    pass


def kleidiai_lines(text: str) -> list[str]:
    """ggml's KleidiAI log lines: which kernels it chose for this CPU (and whether SME)."""
    return [ln.strip() for ln in text.splitlines() if KLEIDIAI_LINE in ln]


def feature_lines(text: str) -> list[str]:
    """What the engine said about the CPU: ggml's system info and KleidiAI's choices."""
    return [ln.strip() for ln in text.splitlines() if ln.startswith(SYSTEM_INFO)][:1] + (
        kleidiai_lines(text)
    )


def sme_selected(lines: list[str]) -> bool:
    """Whether ggml says it enabled KleidiAI's SME kernels."""
    return any("SME enabled" in ln for ln in lines)


# what llama-bench says it ran, kept from its first test
RAN_KEYS = (
    "build_commit",
    "n_threads",
    "n_batch",
    "n_ubatch",
    "type_k",
    "type_v",
    "flash_attn",
    "model_type",
    "model_size",
    "cpu_info",
)


def one_test(tests: list, n_prompt: int, n_gen: int, n_depth: int, phase: str) -> dict:
    """The one llama-bench test of these sizes, as a phase's result (its one sample)."""
    found = [
        t
        for t in tests
        if (t.get("n_prompt"), t.get("n_gen"), t.get("n_depth")) == (n_prompt, n_gen, n_depth)
    ]
    if len(found) != 1:
        raise LlamaBenchParseError(
            f"llama-bench: {len(found)} {phase} tests with n_prompt={n_prompt}, "
            f"n_gen={n_gen}, n_depth={n_depth} (expected 1)"
        )
    samples = found[0].get("samples_ns") or []
    if len(samples) != 1 or not samples[0] or samples[0] <= 0:
        raise LlamaBenchParseError(f"llama-bench {phase} test: samples_ns {samples!r}")
    tokens, seconds = n_prompt or n_gen, samples[0] / 1e9
    return {
        "phase": phase,
        "tokens": tokens,
        "seconds": seconds,
        "tps": tokens / seconds,
        "context_start": n_depth,
    }


def parse_output(stdout: str, prompt_tokens: int, generate_tokens: int) -> dict:
    """llama-bench -o json: the prefill test (P tokens, depth 0) and the decode test (N tokens
    after P), one sample each; anything else missing or malformed is an error naming it."""
    start = stdout.find("[")
    try:
        tests = json.loads(stdout[start:]) if start >= 0 else None
    except json.JSONDecodeError as err:
        raise LlamaBenchParseError(f"llama-bench printed no readable JSON: {err}") from None
    if not isinstance(tests, list) or not tests:
        raise LlamaBenchParseError("llama-bench printed no test results (expected a JSON list)")
    results = [
        one_test(tests, prompt_tokens, 0, 0, "prefill"),
        one_test(tests, 0, generate_tokens, prompt_tokens, "decode"),
    ]
    ran = {key: tests[0].get(key) for key in RAN_KEYS}
    return {"results": results, "ran": ran, "tests": tests}


class LlamaCppEngine(BuiltFromSource):
    kind = "llamacpp"
    config_key = "llamacpp"
    model_format = "gguf"
    # llama-bench's test_prompt and test_gen (tools/llama-bench/llama-bench.cpp): its clock
    # around llama_decode of the prompt (the output head for its last position), then of one
    # token at a time after it (-d: at the prompt's depth), each synchronized; random token
    # ids, no sampling, no text
    timers = Timers(
        prefill=("embedding", "forward"),
        decode=("embedding", "forward"),
        source="llama.cpp's tools/llama-bench/llama-bench.cpp: test_prompt, test_gen",
    )
    config_section = "llamacpp"
    gate_tool = GATE_TOOL
    compilers = llamacpp.COMPILERS
    sme_switch = SME_SWITCH
    integer_env = (SME_SWITCH,)
    reports_sme_choice = True  # ggml's `kleidiai:` lines
    switch_turns_off = "KleidiAI's SME kernels; its NEON ones stay"
    source_forms = "sdist or path, with `llamacpp.kleidiai` where it builds KleidiAI"
    # llama.cpp's own tests do not reach the kernels compared here: test-backend-ops checks
    # other backends against the CPU backend, which it skips (ggml-org/llama.cpp #6028), and
    # test-quantize-fns checks ggml's own quantize and dot-product functions, not KleidiAI's
    # matrix multiplication, which the CPU backend reaches through its extra buffer type
    no_test_suite = (
        "none of llama.cpp's own tests runs KleidiAI's SME2 micro-kernels (test-backend-ops "
        "takes the CPU backend as its reference; test-quantize-fns checks ggml's own functions)"
    )
    # ggml's thread pool (ggml/src/ggml-cpu/ggml-cpu.c): the barrier between graph nodes and a
    # secondary thread's polling for work (its node computations are other functions)
    waiting_functions = (
        r"^(ggml_barrier|ggml_graph_compute_secondary_thread|ggml_graph_compute_poll_for_work"
        r"|ggml_graph_compute_check_for_work|ggml_graph_compute_thread_sync)$"
    )

    @classmethod
    def config_problems(cls, engines: dict[str, dict], tree: dict, models: dict) -> list[str]:
        """Beside its source: KleidiAI pinned where a build asks for it (else llama.cpp
        downloads it at configure time), and a transformers checkpoint of every model (the
        GGUF is converted from it; a downloaded MNN export has none)."""
        problems = super().config_problems(engines, tree, models)
        kleidiai = sorted(
            name
            for name, spec in engines.items()
            if spec[cls.config_key].get("flags", {}).get("GGML_CPU_KLEIDIAI") in (True, "ON")
        )
        if kleidiai and "kleidiai" not in tree:
            problems.append(
                f"config key `llamacpp.kleidiai`: engines {kleidiai} build with "
                "GGML_CPU_KLEIDIAI, which would download KleidiAI at configure time; pin its "
                "archive (version, url, md5 or sha256)"
            )
        return problems + checkpoint_problems(models, engines, "llama.cpp", "its converter")

    @classmethod
    def provide_source(cls, tree: dict, cache) -> dict:
        return llamacpp.provide_source(tree.get("source", {}), tree.get("kleidiai", {}), cache)

    @classmethod
    def host_tools(cls, section: dict, engines: dict[str, dict], keys: dict[str, str]) -> dict:
        """llama-quantize for this host, with `llamacpp.quantizer.flags`: where it is built
        alone (quantizer_dir), and where the conversion finds it (quantizer_bin: a host engine's
        build of the same flags holds it, else that); the tree's receipt both rules read
        (quantizer_source: its converter)."""
        flags = canonical(section.get("quantizer", {}).get("flags", {}))
        alone = llamacpp.quantizer_dir(section, flags)
        holder = llamacpp.quantizer_engine(engines, list(engines), flags)
        where = f"results/engines/{keys[holder]}/bin" if holder else alone
        return {
            "quantizer_dir": alone,
            "quantizer_bin": where,
            "quantizer_flags": flags,
            "quantizer_source": receipt_of(cls.config_section, section),
        }

    @classmethod
    def build(cls, job: BuildJob) -> dict:
        return llamacpp.build_engine(job)

    @classmethod
    def source_identity(cls, source: dict) -> dict:
        return {"kleidiai": source.get("kleidiai", {}).get("version")}

    @classmethod
    def sme2_kernel_names(cls, record: dict) -> list[str]:
        return record.as_written.get("sme", {}).get("kleidiai_sme_functions", [])

    @classmethod
    def sme_kernel_count(cls, record: dict) -> int:
        return record.as_written.get("sme", {}).get("kleidiai_sme_function_count", 0)

    @classmethod
    def needs_sme2(cls, record: dict) -> bool:
        return bool(
            record.as_written.get("sme", {}).get("kleidiai_sme_function_count")
        )  # KleidiAI's

    @classmethod
    def model_path(cls, receipt: dict) -> str:
        return posixpath.join(receipt["models"][cls.model_format], MODEL_FILE)

    def bench_command(self, device, model: str, runtime: dict, bench: Bench, out: str):
        threads = runtime["thread_num"]
        prompt, generate = bench.prompt_tokens, bench.generate_tokens
        self.asked = (prompt, generate)  # what read_bench must find in the output
        argv = [
            posixpath.join(self.dir, "llama-bench"),
            "-m",
            model,
            "-p",
            str(prompt),
            "-n",
            str(generate),
            "-d",
            f"0,{prompt}",
            "-t",
            str(threads),
            "-r",
            "1",
            "-o",
            "json",
        ]
        return argv, self.library_env()

    def read_bench(self, device, result, out: str) -> dict:
        parsed = parse_output(result.stdout, *self.asked)
        lines = [f"cpu_info: {parsed['ran']['cpu_info']}", *kleidiai_lines(result.stderr)]
        return {
            "kind": "bench",
            "warmup": 1,  # llama-bench runs each test once unmeasured first
            "ran": parsed["ran"],
            "results": parsed["results"],
            "engine": {
                "device_supports": "; ".join(lines),
                "kleidiai_sme": sme_selected(lines),
                "tool": "llama-bench",
                "version": self.record.version,
            },
            "llama_bench_tests": parsed["tests"],
        }

    def greedy(self, device, receipt: dict, ask: GreedyAsk) -> dict:
        """llama_greedy (against this engine's libllama) per prompt, with llama-bench's
        context settings and the variant's threads: token ids, top-k logits per step."""
        tool = posixpath.join(receipt["gate_tools"][self.record.name], "llama_greedy")
        threads = ask.runtime["thread_num"]

        def argv_of(prompt_path: str, out: str, forced_path: str | None) -> list[str]:
            argv = [tool, self.model_path(receipt), prompt_path, str(ask.max_new_tokens), out]
            return argv + [str(threads), str(GATE_TOP_K)] + ([forced_path] if forced_path else [])

        def engine_of(first) -> dict:
            lines = feature_lines(first.stderr) if first else []
            return {
                "device_supports": "; ".join(lines),
                "kleidiai_sme": sme_selected(lines),
                "tool": "llama_greedy",
            }

        return self.tool_greedy(device, ask, argv_of, engine_of)
