"""What the kinds share of running an engine on a device and reading what it wrote: feature
lines, staged files, the command record, a crashed answer, the gate tools' answers, a fetched
text file."""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path

from mnnrepro.errors import ReproError

log = logging.getLogger(__name__)


FEATURE = re.compile(r"(\w+)\s*:\s*([01])\b")
# what follows `supports`, its source in parentheses where the line names one
SUPPORTS = re.compile(r"supports(?: \([^)]*\))?:(.*)")


def supported_features(line: str) -> dict[str, bool]:
    """MNN's `The device supports: i8sdot:0, fp16:0, i8mm: 0, sve2: 0, sme2: 0`, or the
    ONNX Runtime runners' `The process supports (AT_HWCAP2, what cpuinfo reads): sme:1,
    sme2:1` -> fields ({"sme2": False, ...}); {} where there is no such line. Read as values,
    never as text: the line names `sme2` whether or not the CPU has it."""
    found = SUPPORTS.search(line)
    return {k: v == "1" for k, v in FEATURE.findall(found.group(1))} if found else {}


def staged_files(record: dict, receipt: dict) -> dict[str, str]:
    """Device path -> sha256 of an engine's files staged under its key (a build's, or unpacked
    wheels: EngineKind.stages_files), where the push receipt put them."""
    base = receipt["engines"][record.name]
    return {f"{base}/{f['path']}": f["sha256"] for f in record.files}


def files_of(record: dict) -> list[tuple[str, str]]:
    return sorted((f["path"], f["sha256"]) for f in record.files)


class BenchError(ReproError, RuntimeError):
    pass


class ToolOutputError(BenchError, ValueError):
    pass


# a gate tool's AT_HWCAP2 line, as genai_llm.hwcap2_line's
SUPPORTS_LINE = "The process supports"

GATE_TOP_K = 8  # logits kept per step: mnn_greedy's default, the Python runner's TOP_K


def command_record(argv: list[str], env: dict | None, result) -> dict:
    """What ran, so that it can be repeated by hand: argv, the variables set for it, and the
    exact shell line on the device (every word quoted)."""
    return {"argv": [str(a) for a in argv], "env": dict(env or {}), "line": result.command_line}


def crashed_answer(device, prompt: str, argv: list[str], result) -> dict:
    """On an emulated device a crash is what the check found; elsewhere it is an error."""
    last = (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
    if not device.emulated:
        why = "timed out" if result.returncode is None else f"exit code {result.returncode}"
        raise BenchError(
            f"device {device.name}: the correctness gate's greedy run failed ({why}: {last}); "
            "rerun to ask again (what was measured is kept)\n$ "
            + " ".join(argv)
            + "\n"
            + result.stderr[-4000:]
        )
    log.warning("%s crashed on prompt %r: %s", device.name, prompt, last)
    return {"prompt": prompt, "tokens": [], "crashed": last}


def tool_answers(device, prompts, forced, argv_of, env: dict, timeout: float):
    """A gate tool's answers (token ids, top-k logits per step), one process per prompt so
    that a crash is its prompt's. argv_of(prompt file, output file, forced-tokens file or None)
    gives the tool's command line; env is the whole environment it runs with. Returns the
    answers and the first successful run's result (whose output names the engine's features)."""
    answers, first = [], None
    for i, prompt in enumerate(prompts):
        prompt_path, out = device.scratch(f"prompt-{i}.txt"), device.scratch(f"greedy-{i}.json")
        device.put_text(prompt + "\n", prompt_path)
        forced_path = None
        if forced is not None and forced[i] is not None:  # None: the prompt's own answer
            forced_path = device.scratch(f"forced-{i}.txt")
            device.put_text(" ".join(map(str, forced[i])) + "\n", forced_path)
        argv = argv_of(prompt_path, out, forced_path)
        result = device.run(argv, timeout=timeout, env=env)
        command = command_record(argv, env, result)
        if not result.ok:
            answers.append({**crashed_answer(device, prompt, argv, result), "command": command})
            continue
        answer = json.loads(fetch_text(device, out))["answers"][0]
        answers.append(
            {
                "prompt": prompt,
                "tokens": answer["tokens"],
                "steps": answer["steps"],
                "prompt_tokens": answer["prompt_tokens"],
                **({"forced_tokens": answer["forced_tokens"]} if forced_path else {}),
                "command": command,
            }
        )
        first = first or result
    return answers, first


def fetch_text(device, path: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "out"
        device.fetch(path, local)
        return local.read_text(encoding="utf-8")


def parse_tool_bench(stdout: str, stderr: str, prompt: int, generate: int, tool: str) -> dict:
    """A gate tool's bench JSON line (ort_genai_tool's, executorch_tool's), checked against
    what was asked (P prompt tokens into an empty context, N decode tokens after them), as the
    runner's bench payload."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    try:
        ran = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise ToolOutputError(f"{tool} bench printed no JSON line: {stdout[-300:]!r}") from None
    context = (ran.get("context_after_prefill"), ran.get("context_after_decode"))
    if (ran.get("prompt_tokens"), ran.get("generate_tokens")) != (prompt, generate) or (
        context != (prompt, prompt + generate)
    ):
        raise ToolOutputError(
            f"{tool} bench ran {ran.get('prompt_tokens')} + {ran.get('generate_tokens')} tokens "
            f"to a context of {context}, asked {prompt} + {generate}"
        )
    if not (ran["prefill_s"] > 0 and ran["decode_s"] > 0):
        raise ToolOutputError(f"{tool} bench: phase seconds {ran['prefill_s']}, {ran['decode_s']}")
    phases = (
        ("prefill", prompt, ran["prefill_s"], 0),
        ("decode", generate, ran["decode_s"], prompt),
    )
    return {
        "warmup": ran["warmup"],
        "context": {"after_prefill": context[0], "after_decode": context[1]},
        "results": [
            {"phase": p, "tokens": n, "seconds": s, "tps": n / s, "context_start": start}
            for p, n, s, start in phases
        ],
        "engine": {"device_supports": supports_line(stderr), "tool": tool},
    }


def tool_bench(result, asked: tuple[dict, int, int], tool: str, version) -> dict:
    """A gate tool's bench run as the runner's bench payload: what was asked (the runtime, P
    prompt and N decode tokens) checked against its JSON line, with the engine's version."""
    runtime, prompt, generate = asked
    parsed = parse_tool_bench(result.stdout, result.stderr, prompt, generate, tool)
    engine = {**parsed.pop("engine"), "version": version}
    ran = {**runtime, "warmup": parsed["warmup"]}
    return {"kind": "bench", "runtime": runtime, "ran": ran, **parsed, "engine": engine}


def greedy_payload(ask, answers: list[dict], engine: dict) -> dict:
    """A gate tool's greedy answers (tool_answers') as the runner's greedy payload for the ask
    (engines/base.GreedyAsk), with what the tool says of the engine."""
    return {
        "kind": "greedy",
        "runtime": ask.runtime,
        "env": ask.env or {},
        "answers": answers,
        "engine": engine,
    }


def tool_engine(first, tool: str) -> dict:
    """What an API-driven gate tool says of the engine: the features line of its first
    successful run (None: none succeeded)."""
    return {"device_supports": supports_line(first.stderr) if first else "", "tool": tool}


def supports_line(stderr: str) -> str:
    return next((ln.strip() for ln in stderr.splitlines() if ln.startswith(SUPPORTS_LINE)), "")
