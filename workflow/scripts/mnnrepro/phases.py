"""The phases a benchmark times and a prediction profiles: their names, declared once."""

from __future__ import annotations

PHASES = ("prefill", "decode")  # what every benchmark measures, in this order
# what a benchmark of a vision model also measures (bench.vision), in this order: the image
# encoder, the image prompt's prefill, and the time to the first token, which holds both
VISION_PHASES = ("vision", "image_prefill", "first_token")
ALL_PHASES = PHASES + VISION_PHASES
SPANNING_PHASES = ("first_token",)  # its time holds other phases' times
# what a prediction also profiles on its device (analysis/token_work.py): the start-up the phases
# share (a 1-token prompt, 1 token: loading), a prefill of half the prompt (work per token)
STARTUP_PHASE, SHORT_PREFILL_PHASE = "startup", "prefill_short"
PREDICTION_PHASES = (STARTUP_PHASE, SHORT_PREFILL_PHASE)


def short_prompt(prompt_tokens: int) -> int:
    """The short prefill's prompt: half the benchmark's, at least 2 tokens."""
    return max(prompt_tokens // 2, 2)
