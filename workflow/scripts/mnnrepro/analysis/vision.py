"""The vision phase in summary.md: what a user who asks about a photo waits for.

The article's demonstration is a photo question in MNN Chat; `llm_bench` (the article's
measurement) has no image input. For a model with a vision encoder every benchmark
invocation also asks each image of `bench.vision.images` once (engines/runner/python_runner.py):

* `vision`: the image encoder (a ViT: large matrix products, where SME2's outer products
  should help most), by the engine's own timer; tok/s = image tokens / s, and MP/s from the
  pixels the engine encoded (bench.csv `pixels_mp` / `seconds`);
* `image_prefill`: the prefill of the image prompt (image and text tokens);
* `first_token`: from the question to its first token (both of the above and the first pick);
  tok/s = questions / s, so 1 / tok/s is the time to the first token of one question.

The article claims nothing for images: these rows say `no claim` unless `comparison.claims`
names the phase. Not measured: taking the photo, the app, and anything before the engine
reads the image file (MNN decodes and resizes it inside the timed encode call).
"""

from __future__ import annotations

import pandas as pd

from mnnrepro.analysis.text import pct
from mnnrepro.phases import VISION_PHASES


def gain_cell(by_phase: pd.DataFrame, phase: str) -> str:
    if phase not in by_phase.index:
        return "-"
    r = by_phase.loc[phase]
    return f"{pct(r.gain)} [{pct(r.gain_ci_low)}, {pct(r.gain_ci_high)}] {r.verdict}"


def first_token_ms(tps: float) -> str:
    return f"{1000 / tps:.1f} ms" if tps and not pd.isna(tps) else "-"


def vision_section(summary: pd.DataFrame, document: dict) -> list[str]:
    """One row per device, model and pair: each vision phase's gain with its CI, and the time
    to the first token of one image question, baseline and treatment (medians)."""
    rows = summary[summary["phase"].isin(VISION_PHASES)]
    if rows.empty:
        return []
    vision = document["bench"].get("vision", {})
    images = ", ".join(f"`{i}`" for i in vision.get("images", []))
    out = [
        "",
        "## The vision phase (image questions)",
        "",
        f'Each invocation asks {images} once ("{vision.get("text", "")}") into an empty '
        "context, after prefill and decode: `vision` = the image encoder (engine's timer), "
        "`image_prefill` = the image prompt's prefill, `first_token` = question to first "
        "token. Gains with their CI; the article claims nothing for images. Not measured: the "
        "camera, the app, image decoding outside the engine.",
        "",
        "| device | model | treatment vs baseline | vision | image prefill | first token | "
        "time to first token (baseline -> treatment) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (device, model, base, treat), group in rows.groupby(
        ["device", "model", "baseline", "treatment"], sort=False
    ):
        by_phase = group.set_index("phase")
        cells = [gain_cell(by_phase, phase) for phase in VISION_PHASES]
        ttft = "-"
        if "first_token" in by_phase.index:
            first = by_phase.loc["first_token"]
            ttft = (
                f"{first_token_ms(first.median_baseline_tps)} -> "
                f"{first_token_ms(first.median_treatment_tps)}"
            )
        out.append(f"| {device} | {model} | {treat} vs {base} | {' | '.join(cells)} | {ttft} |")
    return out
