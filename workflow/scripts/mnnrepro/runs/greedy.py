"""The correctness gate on a device: its prompts (images staged first), the greedy answers of
one variant (its files verified first), labelled by prompt, and the reference's tokens to
teacher-force (analysis/correctness.py judges the answers)."""

from __future__ import annotations

from pathlib import PurePath

from mnnrepro.devices.base import Device
from mnnrepro.engines.base import GreedyAsk
from mnnrepro.engines.registry import engine_for
from mnnrepro.runs.staging import check_receipt, engine_files, process_env
from mnnrepro.sections import Correctness


def run_greedy(
    device: Device,
    receipt: dict,
    record: dict,
    variant: dict,
    prompts: list[str],
    max_new_tokens: int,
    timeout: float,
    tool: dict | None = None,
    prompt_tokens: int = 512,
    forced: list[list[int]] | None = None,
) -> dict:
    """Greedy answers of one variant (runtime + env); the engine's files, and a built
    engine's gate tool, are verified on the device first. forced: per prompt, the reference's
    tokens to feed instead of the engine's own choices (teacher forcing)."""
    check_receipt(device, receipt)
    expected = engine_files(record, receipt)
    if tool:
        base = receipt["gate_tools"][record.name]
        expected.update({f"{base}/{f['path']}": f["sha256"] for f in tool["files"]})
    device.verify(expected)
    ask = GreedyAsk(
        dict(variant.runtime),
        prompts,
        max_new_tokens,
        timeout,
        process_env({"env": variant.env, "hide_sme": variant.hide_sme}, {}, receipt),
        prompt_tokens,
        forced,
    )
    return engine_for(record, receipt).greedy(device, receipt, ask)


def gate_prompts(correctness: Correctness, images: dict[str, dict], vision: bool) -> list[dict]:
    """The gate's prompts: what is sent to the engine, and the label reports show.

    images: each configured image -> {"device_path", "sha256"} (staged on the device).

    A vision model also gets every `correctness.image_prompts` entry, sent in MNN's
    multimodal prompt syntax (`<img>path on the device</img>text`), so the treatment's
    kernels run the vision encoder too.
    """
    prompts = [{"label": p, "sent": p} for p in correctness.prompts]
    if not vision:
        return prompts
    image_prompts = correctness.image_prompts
    if not image_prompts:
        raise ValueError(
            "the model has a vision encoder (llm_config.json `is_visual`) but config key "
            "`correctness.image_prompts` is empty: the gate would not check the vision path"
        )
    for prompt in image_prompts:
        image = images[prompt["image"]]
        prompts.append(
            {
                "label": f"[image {PurePath(prompt['image']).name}] {prompt['text']}",
                "sent": f"<img>{image['device_path']}</img>{prompt['text']}",
                "image_sha256": image["sha256"],
            }
        )
    return prompts


def label_answers(payload: dict, prompts: list[dict]) -> dict:
    """Key a greedy payload's answers by prompt label (device paths differ between devices)."""
    by_sent = {p["sent"]: p for p in prompts}
    answers = []
    for answer in payload["answers"]:
        prompt = by_sent[answer["prompt"]]
        extra = {k: v for k, v in prompt.items() if k != "label"}
        answers.append({**answer, **extra, "prompt": prompt["label"]})
    return {**payload, "answers": answers}


def forced_plan(reference: dict, prompts: list[dict]) -> list[tuple[dict, list[int]]]:
    """The prompts to teacher-force, each with the reference's greedy tokens to feed: those
    the reference answered (a crashed or empty reference answer is judged as such, there is
    nothing to feed)."""
    by_label = {a["prompt"]: a for a in reference["answers"]}
    plan = []
    for prompt in prompts:
        tokens = by_label.get(prompt["label"], {}).get("tokens") or []
        if tokens:
            plan.append((prompt, list(tokens)))
    return plan
