"""How one benchmark invocation is run and read, per engine kind.

* `prebuilt`: the PyPI wheel through prebuilt_runner.py (needs a Python on the device);
* `build`: MNN's own `llm_bench` from a build of ours, one configuration per invocation
  (`-rep 1`; llm_bench drops its own first run), `-kv true` so prefill and decode are split
  at release 3.6.1, `-j` JSON cross-checked against the Markdown table, run from a scratch
  directory (it creates ./tmp) with LD_LIBRARY_PATH set to this engine's directory only.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
import tempfile
from pathlib import Path

from mnnrepro import llmbench

PRECISION_CODES = {"normal": 0, "high": 1, "low": 2}  # llm_bench -c
MEMORY_CODES = {"normal": 0, "high": 1, "low": 2}  # llm_bench --memory
log = logging.getLogger(__name__)


class BenchError(RuntimeError):
    pass


def crashed_answer(device, prompt: str, argv: list[str], result) -> dict:
    """On an emulated device a crash is what the check found; elsewhere it is an error."""
    last = (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
    if not device.emulated:
        raise BenchError("greedy run failed:\n$ " + " ".join(argv) + "\n" + result.stderr[-4000:])
    log.warning("%s crashed on prompt %r: %s", device.name, prompt, last)
    return {"prompt": prompt, "tokens": [], "crashed": last}


class PrebuiltEngine:
    kind = "prebuilt"

    def __init__(self, record: dict, receipt: dict):
        self.record, self.runner = record, receipt["runner"]

    def bench_command(
        self, device, model_config: str, runtime: dict, bench: dict, out: str
    ) -> tuple[list[str], dict]:
        argv = [
            device.python(),
            self.runner,
            "bench",
            "--config",
            model_config,
            "--runtime",
            json.dumps(runtime, sort_keys=True),
            "--out",
            out,
            "--prompt-tokens",
            str(bench["prompt_tokens"]),
            "--generate-tokens",
            str(bench["generate_tokens"]),
            "--warmup",
            str(bench["warmup"]),
        ]
        return argv, {}

    def read_bench(self, device, result, out: str) -> dict:
        return json.loads(fetch_text(device, out))

    def greedy(
        self,
        device,
        receipt: dict,
        runtime: dict,
        prompts: list[str],
        max_new_tokens: int,
        timeout: float,
    ) -> dict:
        out = device.scratch("greedy.json")
        payload, answers = None, []
        for prompt in prompts:  # one process per prompt: a crash is attributed to its prompt
            argv = [
                device.python(),
                self.runner,
                "greedy",
                "--config",
                receipt["model_config"],
                "--runtime",
                json.dumps(runtime, sort_keys=True),
                "--out",
                out,
                "--prompts",
                json.dumps([prompt], ensure_ascii=False),
                "--max-new-tokens",
                str(max_new_tokens),
            ]
            result = device.run(argv, timeout=timeout)
            if result.ok:
                payload = json.loads(fetch_text(device, out))
                answers += payload["answers"]
            else:
                answers.append(crashed_answer(device, prompt, argv, result))
        payload = payload or {"kind": "greedy", "runtime": runtime, "engine": {}}
        return {**payload, "answers": answers}


class BuiltEngine:
    kind = "build"

    def __init__(self, record: dict, receipt: dict):
        self.record = record
        self.dir = receipt["engines"][record["engine"]]

    def bench_command(
        self, device, model_config: str, runtime: dict, bench: dict, out: str
    ) -> tuple[list[str], dict]:
        argv = llmbench.build_args(
            posixpath.join(self.dir, "llm_bench"),
            model_config,
            bench["prompt_tokens"],
            bench["generate_tokens"],
            runtime.get("thread_num", 4),
            PRECISION_CODES[runtime.get("precision", "low")],
            out,
        )
        if "memory" in runtime:
            argv += ["--memory", str(MEMORY_CODES[runtime["memory"]])]
        return argv, {"LD_LIBRARY_PATH": self.dir}

    def greedy(
        self,
        device,
        receipt: dict,
        runtime: dict,
        prompts: list[str],
        max_new_tokens: int,
        timeout: float,
    ) -> dict:
        """llm_demo per prompt with a greedy config written on the device (base_dir -> model)."""
        model_config = receipt["model_config"]
        original = json.loads(fetch_text(device, model_config))
        config_path = device.scratch("config.greedy.json")
        device.put_text(
            json.dumps(
                greedy_config(original, posixpath.dirname(model_config), runtime, max_new_tokens)
            ),
            config_path,
        )
        answers, supports = [], ""
        for i, prompt in enumerate(prompts):
            prompt_path = device.scratch(f"prompt-{i}.txt")
            device.put_text(prompt + "\n", prompt_path)
            argv = [
                posixpath.join(self.dir, "llm_demo"),
                config_path,
                prompt_path,
                str(max_new_tokens),
            ]
            result = device.run(argv, timeout=timeout, env={"LD_LIBRARY_PATH": self.dir})
            if not result.ok:
                answers.append(crashed_answer(device, prompt, argv, result))
                continue
            text = llm_demo_answer(result.stdout)
            answers.append({"prompt": prompt, "text": text, "tokens": list(text)})
            supports = supports or llmbench.supports_line(result.stdout)
        return {
            "kind": "greedy",
            "unit": "characters",
            "runtime": runtime,
            "answers": answers,
            "engine": {
                "device_supports": supports or device.engine_log_supports(),
                "tool": "llm_demo",
            },
        }

    def read_bench(self, device, result, out: str) -> dict:
        with_text = fetch_text(device, out)
        table = llmbench.parse_table(result.stdout)
        rows = llmbench.parse_json(with_text)
        llmbench.cross_check(table, rows)
        supports = llmbench.supports_line(result.stdout) or device.engine_log_supports()
        return {
            "kind": "bench",
            "warmup": 1,  # llm_bench runs rep + 1 times and drops the first
            "results": [
                {
                    "phase": r["phase"],
                    "tokens": r["tokens"],
                    "seconds": r["tokens"] / r["tps"],
                    "tps": r["tps"],
                }
                for r in rows
            ],
            "engine": {
                "device_supports": supports,
                "tool": "llm_bench",
                "version": self.record.get("version"),
            },
            "llm_bench_stdout": result.stdout,
        }


def fetch_text(device, path: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "out"
        device.fetch(path, local)
        return local.read_text(encoding="utf-8")


def engine_for(record: dict, receipt: dict):
    kinds = {"prebuilt": PrebuiltEngine, "build": BuiltEngine}
    return kinds[record["kind"]](record, receipt)


# ---- greedy answers (the correctness gate) -------------------------------------------------

LLM_DEMO_NOISE = re.compile(
    r"^(config path is|The device supports:|CPU Group:|main, \d+, cost time|Prepare for "
    r"|prompt file is|#{5,}|\s*(prompt tokens num|decode tokens num|vision time|pixels_mp|"
    r"audio process time|audio input time|prefill time|decode time|sample time|prefill speed|"
    r"decode speed|vision speed|audio RTF)\b)"
)


def llm_demo_answer(stdout: str) -> str:
    """The generated text in llm_demo's output: everything that is not its own reporting."""
    lines = stdout.splitlines()
    start = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("prompt file is")), 0)
    body = []
    for line in lines[start:]:
        if line.startswith("#####"):
            break
        if not LLM_DEMO_NOISE.match(line):
            body.append(line)
    return "\n".join(body).strip("\n")


def greedy_config(model_config: dict, model_dir: str, runtime: dict, max_new_tokens: int) -> dict:
    """The model's config.json (files found via base_dir), greedy, with the variant's runtime."""
    return {
        **model_config,
        **runtime,
        "base_dir": model_dir.rstrip("/") + "/",
        "sampler_type": "greedy",
        "max_new_tokens": max_new_tokens,
    }
