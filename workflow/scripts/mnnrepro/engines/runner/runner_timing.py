"""Device-side: what the runner (python_runner.py, staged beside it) times, and the clock.

Timers: the bindings fill MNN's own ``context.prefill_us`` / ``decode_us`` only inside
``generate()``, which in the 3.6.1 wheel ends the process silently (exit code 0, no output)
in most of our tries on this host; so each phase is timed here around ``forward()`` calls,
which include picking the greedy token (MNN's sampler does the same inside its timer). The
context length MNN reports after each phase is recorded as a cross-check.

With ``--images`` (a vision model: the vision phase), after the text phases and in the same
process, each image question (``<img>path</img>text`` in the chat template) is asked once
into an empty context: ``vision`` is the image encoder's time by MNN's own timer
(``context.vision_us``: ``tokenizer_encode`` runs the vision encoder and fills it, with
``pixels_mp``, the pixels it encoded after resizing to the model's ``image_size``), tokens =
the image tokens it produced; ``image_prefill`` is the prefill of the whole image prompt
(image and text tokens) around ``forward()``; ``first_token`` is the time from the question to
its first token (encode + prefill + the greedy pick), tokens = questions. Each phase sums the
image set (one entry per phase and invocation); image decoding and resizing happen inside
MNN's encode call, the camera and the app do not exist here.
"""

from __future__ import annotations

import json
import os
import time

SYNTHETIC_TOKEN = 16  # llm_bench's prompt token


def argmax(logits) -> int:
    # the device's Python: loaded where logits are read
    import numpy as np

    values = np.asarray(logits.read())
    return int(values.reshape(-1, values.shape[-1])[-1].argmax())


def context_length(llm) -> int | None:
    try:
        return int(llm.context.all_seq_len)
    except (AttributeError, TypeError, ValueError):  # bindings without the context object
        return None


def time_phases(llm, prompt_tokens: int, generate_tokens: int) -> dict:
    """One llm_bench -kv true repetition: P prompt tokens into an empty context, then N
    decode tokens in the same context. Seconds per phase, tokens made, context lengths."""
    llm.reset()
    ids = [SYNTHETIC_TOKEN] * prompt_tokens
    prefill_from = device_clock()
    start = time.perf_counter()
    token = argmax(llm.forward(ids))  # forces the result, as the engine's own timer would
    prefill_s = time.perf_counter() - start
    prefill_to = device_clock()
    after_prefill = context_length(llm)
    produced = []
    decode_from = device_clock()
    start = time.perf_counter()
    for _ in range(generate_tokens):
        token = argmax(llm.forward([token]))
        produced.append(token)
    decode_s = time.perf_counter() - start
    decode_to = device_clock()
    return {
        "prefill_s": prefill_s,
        "decode_s": decode_s,
        "produced": produced,
        "context_after_prefill": after_prefill,
        "context_after_decode": context_length(llm),
        "windows": {"prefill": [prefill_from, prefill_to], "decode": [decode_from, decode_to]},
    }


def image_pad_id(config_path: str) -> int | None:
    """MNN's `image_pad` token id (llm_config.json beside config.json): an encoded image
    prompt holds it once per vision token."""
    path = os.path.join(os.path.dirname(os.path.abspath(config_path)), "llm_config.json")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh).get("image_pad")


def time_vision(llm, images: list[str], text: str, image_pad: int | None) -> dict:
    """The vision phase over the image set: each image question into an empty context."""
    totals = {"vision_s": 0.0, "image_tokens": 0, "pixels_mp": 0.0}
    totals.update(prefill_s=0.0, prompt_tokens=0, first_token_s=0.0, questions=0)
    vision_from = device_clock()
    for image in images:
        llm.reset()
        prompt = llm.apply_chat_template(f"<img>{image}</img>{text}")
        start = time.perf_counter()
        ids = list(llm.tokenizer_encode(prompt))  # runs the vision encoder
        encoded = time.perf_counter()
        argmax(llm.forward(ids))
        first = time.perf_counter()
        context = llm.context
        totals["vision_s"] += context.vision_us / 1e6
        totals["pixels_mp"] += float(context.pixels_mp)
        totals["image_tokens"] += sum(1 for i in ids if i == image_pad)
        totals["prefill_s"] += first - encoded
        totals["prompt_tokens"] += len(ids)
        totals["first_token_s"] += first - start
        totals["questions"] += 1
    return {**totals, "window": [vision_from, device_clock()]}


def device_clock() -> float:
    """Seconds on this device's boot-time clock (CLOCK_BOOTTIME, what /proc/uptime counts):
    the clock the power samples are stamped with, on the device itself, so each phase's
    energy is integrated over the phase's own window."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)
