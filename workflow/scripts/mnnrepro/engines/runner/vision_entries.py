"""The vision phase's entries of a bench record, from what a vision timing wrote: the Python
runner's own (staged beside it, imported there by its bare name: stdlib only) and a built
engine's vision tool's (read on the host)."""

from __future__ import annotations


def vision_results(vision: dict) -> list[dict]:
    """The vision phase's entries of a bench record (tok/s = tokens / seconds, as every
    phase's; the vision entry's MP/s is pixels_mp / seconds)."""
    return [
        {
            "phase": "vision",
            "tokens": vision["image_tokens"],
            "seconds": vision["vision_s"],
            "tps": vision["image_tokens"] / vision["vision_s"],
            "pixels_mp": vision["pixels_mp"],
            "context_start": 0,
        },
        {
            "phase": "image_prefill",
            "tokens": vision["prompt_tokens"],
            "seconds": vision["prefill_s"],
            "tps": vision["prompt_tokens"] / vision["prefill_s"],
            "context_start": 0,
        },
        {
            "phase": "first_token",
            "tokens": vision["questions"],
            "seconds": vision["first_token_s"],
            "tps": vision["questions"] / vision["first_token_s"],
            "context_start": 0,
        },
    ]
