"""Device-side runner for the engines run through a device's Python: the prebuilt (PyPI) MNN
engine, and ONNX Runtime GenAI (``--engine ort-genai``, its pinned wheels on PYTHONPATH).

This file is staged onto the device and run there with the device's Python, so it
imports nothing from mnnrepro: only the standard library, numpy and MNN or onnxruntime_genai.
Both engines run the same timing loop (runner_timing.py: the phases, the image questions of
``--images``, the clock) and gate below, each staged beside this file, where
``genai_llm.GenaiLlm`` answers the calls they make of MNN's ``Llm`` with genai's ``Generator``.

It measures what MNN's ``llm_bench -kv true`` measures at 3.6.1 (the paper path) for one
configuration and one repetition (``-rep 1``), in one context:

* prefill: P tokens (token 16 repeated, as llm_bench's synthetic prompt) into an empty
  context; tok/s = P / prefill time;
* decode: then exactly N tokens right after them (context P .. P + N, as llm_bench's
  ``response(P tokens, N)``), each step feeding back the greedy token; EOS never ends it
  (llm_bench stops at EOS and counts the tokens it made; the synthetic prompt makes EOS
  rare); tok/s = N / decode time.

``warmup`` unmeasured runs come first (the vision phase's just before it), in the same
process (llm_bench drops its first run the same way). The model is loaded once per process,
so one invocation of this script is one replicate, like one llm_bench launch.

``phases`` mode runs what the kernel profile counts in one process (runs/profile.py): the
model loaded, each phase (``--phases``: [[name, prompt tokens, generated tokens], ...]; an
entry with a fourth item, {"images", "text"}, asks the image questions instead, after the
text phases) run once unmarked (the warm-up, every shape once), then again between two
markers the profiler splits its count at: a stat of ``<--marker>/begin-<name>`` and
``/end-<name>``, paths that do not exist (QEMU's strace logs it in order with the blocks),
and a ``getppid`` call (callgrind writes a part of its profile before it).

``greedy`` mode instead answers fixed prompts with greedy decoding and writes the
token ids, with every step's top-k logits: the correctness gate compares them across
variants and tells a near-tie flip (rounding) from a confident one (a wrong kernel). With
``--forced`` (one token list per prompt: the reference engine's greedy answer) it is
teacher-forced: after the prompt it feeds those tokens instead of its own choices and
records the logits at every step, so every step is compared in the reference's context.

Output: one JSON object written to ``--out`` (atomically)."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import platform
import sys
import tempfile
import time
from importlib import metadata


def flush_c_stdio() -> None:
    with contextlib.suppress(OSError, AttributeError):  # no C library: nothing to flush
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def captured_fd_stdout():
    """Capture what C code prints on file descriptor 1 (MNN uses printf)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 1)
        box = []
        try:
            yield box
        finally:
            sys.stdout.flush()
            flush_c_stdio()  # printf output is block-buffered when stdout is not a terminal
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            box.append(sink.read().decode("utf-8", "replace"))


def load_llm(config_path: str, runtime: dict, engine: str = "mnn"):
    """Create and load an LLM (MNN's from its config.json; ONNX Runtime GenAI's from its model
    directory); returns (llm, what the engine printed while loading)."""
    if engine == "ort-genai":
        from genai_llm import GenaiLlm  # staged beside this file (runs/staging.py)

        with captured_fd_stdout() as printed:
            llm = GenaiLlm(config_path, runtime)
        return llm, printed[0]
    # MNN prints "The device supports: ..." on import; keep it as a fact.
    with captured_fd_stdout() as printed:
        import MNN.llm as mnn_llm  # here: what its import prints is captured

        llm = mnn_llm.create(config_path)
        llm.set_config(dict(runtime))
        llm.load()
    return llm, printed[0]


TOP_K = 8  # logits kept per step, as the built engines' mnn_greedy tool keeps them


def greedy_step(logits) -> dict:
    """The last position's top-k (token id, logit), best first (ties: lower id, as argmax),
    and the mean and standard deviation of all its logits (the scale of a near-tie)."""
    # the device's Python: loaded where logits are read
    import numpy as np

    values = np.asarray(logits.read(), dtype=np.float64)
    row = values.reshape(-1, values.shape[-1])[-1]
    top = np.lexsort((np.arange(row.size), -row))[:TOP_K]

    def number(x):
        return float(x) if np.isfinite(x) else None  # JSON has no NaN: a broken kernel -> null

    return {
        "mean": number(row.mean()),
        "sd": number(row.std()),
        "top": [[int(i), number(row[i])] for i in top],
    }


def greedy_answer(llm, prompt: str, max_new_tokens: int, forced: list[int] | None = None) -> dict:
    """Greedy decoding; with `forced`, step i (i >= 1) follows forced[i - 1] instead of this
    engine's own choice, for len(forced) steps. `tokens` is always this engine's top-1 at
    each step (what it would have chosen there)."""
    llm.reset()
    ids = list(llm.tokenizer_encode(llm.apply_chat_template(prompt)))
    steps = [greedy_step(llm.forward(ids))]
    length = len(forced) if forced is not None else max_new_tokens
    while len(steps) < length:
        fed = forced[len(steps) - 1] if forced is not None else steps[-1]["top"][0][0]
        steps.append(greedy_step(llm.forward([int(fed)])))
    answer = {"tokens": [s["top"][0][0] for s in steps], "steps": steps, "prompt_tokens": len(ids)}
    return answer if forced is None else {**answer, "forced_tokens": [int(t) for t in forced]}


def engine_facts(supports_line: str, engine: str = "mnn") -> dict:
    if engine == "ort-genai":
        # staged beside this file, for ONNX Runtime only
        from genai_llm import genai_facts

        return genai_facts()
    try:
        version = metadata.version("mnn")
    except metadata.PackageNotFoundError:  # pragma: no cover - MNN built from source
        version = ""
    supports = ""
    for line in supports_line.splitlines():
        if line.startswith("The device supports:"):
            supports = line.strip()
    return {
        "mnn_version": version,
        "device_supports": supports,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def timed_vision(llm, args) -> dict | None:
    """The image questions of `--images` (none: None), after as many warm-ups as the text's;
    run last: after an image prompt, the 3.6.1 wheel keeps the image's positions, and a
    text-only forward() of another length crashes (a broadcast error)."""
    from runner_timing import image_pad_id, time_vision  # staged beside this file

    images = json.loads(args.images)
    if not images:
        return None
    image_pad = image_pad_id(args.config)
    for _ in range(args.warmup):
        time_vision(llm, images, args.image_text, image_pad)
    return time_vision(llm, images, args.image_text, image_pad)


def run_bench(args) -> dict:
    from runner_timing import time_phases  # staged beside this file (runs/staging.py)

    runtime = json.loads(args.runtime)
    load_start = time.perf_counter()
    llm, printed = load_llm(args.config, runtime, args.engine)
    load_s = time.perf_counter() - load_start
    warmups = 0
    for _ in range(args.warmup):
        time_phases(llm, args.prompt_tokens, args.generate_tokens)
        warmups += 1
    run = time_phases(llm, args.prompt_tokens, args.generate_tokens)
    results, windows = phase_results(run, timed_vision(llm, args), args.prompt_tokens)
    return {
        "kind": "bench",
        "runtime": runtime,
        "load_s": load_s,
        "warmup": warmups,  # counted as run, not as asked
        "ran": {**runtime, "warmup": warmups},
        "context": {
            "after_prefill": run["context_after_prefill"],
            "after_decode": run["context_after_decode"],
        },
        # when each measured phase ran, on the device's CLOCK_BOOTTIME (seconds)
        "phase_clock": {"clock": "CLOCK_BOOTTIME", **windows},
        "results": results,
        "engine": engine_facts(printed, args.engine),
    }


def phase_results(run: dict, vision: dict | None, prompt_tokens: int) -> tuple[list, dict]:
    """(each measured phase's entry, each phase's window): prefill and decode of the timed
    run, then the image questions' where asked. Their three phases alternate image by image:
    each one's power window is the span of all the questions (the mean power of the work they
    share)."""
    from vision_entries import vision_results  # staged beside this file, as runner_timing

    produced = run["produced"]
    results = [
        {
            "phase": "prefill",
            "tokens": prompt_tokens,
            "seconds": run["prefill_s"],
            "tps": prompt_tokens / run["prefill_s"],
            "context_start": 0,
        },
        {
            "phase": "decode",
            "tokens": len(produced),
            "seconds": run["decode_s"],
            "tps": len(produced) / run["decode_s"],
            "context_start": prompt_tokens,
        },
    ]
    if not vision:
        return results, run["windows"]
    span = {p: vision["window"] for p in ("vision", "image_prefill", "first_token")}
    return results + vision_results(vision), {**run["windows"], **span}


def run_greedy(args) -> dict:
    runtime = json.loads(args.runtime)
    llm, printed = load_llm(args.config, runtime, args.engine)
    prompts = json.loads(args.prompts)
    forced = json.loads(args.forced) if args.forced else [None] * len(prompts)
    if len(forced) != len(prompts):
        raise SystemExit(f"--forced has {len(forced)} token lists for {len(prompts)} prompts")
    answers = [
        {"prompt": p, **greedy_answer(llm, p, args.max_new_tokens, f)}
        for p, f in zip(prompts, forced, strict=True)
    ]
    return {
        "kind": "greedy",
        "runtime": runtime,
        "answers": answers,
        "engine": engine_facts(printed, args.engine),
    }


def mark(path: str) -> None:
    """A phase's marker (module docstring): a stat of a path that does not exist, then getppid."""
    os.path.exists(path)
    os.getppid()


def run_phases(args) -> dict:
    # staged beside this file
    from runner_timing import image_pad_id, time_phases, time_vision

    runtime = json.loads(args.runtime)
    llm, printed = load_llm(args.config, runtime, args.engine)
    phases = json.loads(args.phases)
    image_pad = image_pad_id(args.config) if any(len(p) > 3 for p in phases) else None

    def run(prompt: int, generate: int, *images) -> None:
        if images:  # the image questions: {"images": [...], "text": ...}
            asked = images[0]
            time_vision(llm, asked["images"], asked["text"], image_pad)
        else:
            time_phases(llm, prompt, generate)

    ran = []
    # the image questions last, their warm-up too: after one, a text-only forward() of another
    # length crashes the 3.6.1 wheel (run_bench)
    for group in ([p for p in phases if len(p) == 3], [p for p in phases if len(p) > 3]):
        for _name, *asked in group:  # the warm-up: every shape once, unmarked
            run(*asked)
        for name, *asked in group:
            mark(f"{args.marker}/begin-{name}")
            start = time.perf_counter()
            run(*asked)
            ran.append({"phase": name, "seconds": time.perf_counter() - start})
            mark(f"{args.marker}/end-{name}")
    return {
        "kind": "phases",
        "runtime": runtime,
        "phases": ran,
        "engine": engine_facts(printed, args.engine),
    }


def write_atomically(path: str, payload: dict) -> None:
    tmp = f"{path}.part-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=1, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


MODES = {"bench": run_bench, "greedy": run_greedy, "phases": run_phases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=list(MODES))
    parser.add_argument("--engine", choices=["mnn", "ort-genai"], default="mnn")
    parser.add_argument(
        "--config", required=True, help="the model's MNN config.json, or genai's model directory"
    )
    parser.add_argument("--runtime", default="{}", help="JSON overrides of config.json")
    parser.add_argument("--out", required=True)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--generate-tokens", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument(
        "--images", default="[]", help="JSON list of image files: the vision phase (bench)"
    )
    parser.add_argument("--image-text", default="", help="the question asked of each image")
    parser.add_argument("--prompts", default="[]", help="JSON list of prompts (greedy)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument(
        "--forced", default="", help="JSON: per prompt, the token ids to feed (teacher forcing)"
    )
    parser.add_argument("--phases", default="[]", help="JSON: [[name, prompt, generate], ...]")
    parser.add_argument("--marker", default="", help="the phases' markers' folder (phases)")
    args = parser.parse_args(argv)
    write_atomically(args.out, MODES[args.mode](args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
