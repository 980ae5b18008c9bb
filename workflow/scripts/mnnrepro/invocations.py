"""How one benchmark invocation is run and read, per engine kind.

* `prebuilt`: the PyPI wheel through prebuilt_runner.py (needs a Python on the device);
* `build`: MNN's own `llm_bench` from a build of ours, one configuration per invocation
  (`-rep 1`; llm_bench drops its own first run), `-kv true` so prefill and decode are split
  at release 3.6.1, `-j` JSON cross-checked against the Markdown table, run from a scratch
  directory (it creates ./tmp) with LD_LIBRARY_PATH set to this engine's directory only;
  its correctness gate runs `mnn_greedy`, a tool built against the same engine's libraries,
  which writes token ids and top-k logits (llm_demo prints only text, which a model's tokens
  may not even decode to).
"""

from __future__ import annotations

import json
import logging
import posixpath
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
        env: dict | None = None,
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
            result = device.run(argv, timeout=timeout, env=env or None)
            if result.ok:
                payload = json.loads(fetch_text(device, out))
                answers += payload["answers"]
            else:
                answers.append(crashed_answer(device, prompt, argv, result))
        payload = payload or {"kind": "greedy", "runtime": runtime, "engine": {}}
        return {**payload, "env": env or {}, "answers": answers}


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
        return argv, self.library_env()

    def greedy(
        self,
        device,
        receipt: dict,
        runtime: dict,
        prompts: list[str],
        max_new_tokens: int,
        timeout: float,
        env: dict | None = None,
    ) -> dict:
        """mnn_greedy (built against this engine's own libraries) per prompt, with a greedy
        config written on the device (base_dir -> the model): token ids and top-k logits."""
        tool = posixpath.join(receipt["gate_tools"][self.record["engine"]], "mnn_greedy")
        model_config = receipt["model_config"]
        original = json.loads(fetch_text(device, model_config))
        config_path = device.scratch("config.greedy.json")
        device.put_text(
            json.dumps(
                greedy_config(original, posixpath.dirname(model_config), runtime, max_new_tokens)
            ),
            config_path,
        )
        answers, printed = [], ""
        for i, prompt in enumerate(prompts):  # one process per prompt: a crash is its prompt's
            prompt_path, out = device.scratch(f"prompt-{i}.txt"), device.scratch(f"greedy-{i}.json")
            device.put_text(prompt + "\n", prompt_path)
            argv = [tool, config_path, prompt_path, str(max_new_tokens), out]
            result = device.run(argv, timeout=timeout, env={**(env or {}), **self.library_env()})
            if not result.ok:
                answers.append(crashed_answer(device, prompt, argv, result))
                continue
            answer = json.loads(fetch_text(device, out))["answers"][0]
            answers.append(
                {
                    "prompt": prompt,
                    "tokens": answer["tokens"],
                    "steps": answer["steps"],
                    "prompt_tokens": answer["prompt_tokens"],
                }
            )
            printed = printed or result.stdout
        return {
            "kind": "greedy",
            "unit": "token ids",
            "runtime": runtime,
            "env": env or {},
            "answers": answers,
            "engine": {**engine_lines(printed, device), "tool": "mnn_greedy"},
        }

    def library_env(self) -> dict:
        return {"LD_LIBRARY_PATH": self.dir}

    def read_bench(self, device, result, out: str) -> dict:
        with_text = fetch_text(device, out)
        table = llmbench.parse_table(result.stdout)
        rows = llmbench.parse_json(with_text)
        llmbench.cross_check(table, rows)
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
                **engine_lines(result.stdout, device),
                "tool": "llm_bench",
                "version": self.record.get("version"),
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


def fetch_text(device, path: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "out"
        device.fetch(path, local)
        return local.read_text(encoding="utf-8")


def engine_for(record: dict, receipt: dict):
    kinds = {"prebuilt": PrebuiltEngine, "build": BuiltEngine}
    return kinds[record["kind"]](record, receipt)


# ---- greedy answers (the correctness gate) -------------------------------------------------


def greedy_config(model_config: dict, model_dir: str, runtime: dict, max_new_tokens: int) -> dict:
    """The model's config.json (files found via base_dir), greedy, with the variant's runtime."""
    return {
        **model_config,
        **runtime,
        "base_dir": model_dir.rstrip("/") + "/",
        "sampler_type": "greedy",
        "max_new_tokens": max_new_tokens,
    }
