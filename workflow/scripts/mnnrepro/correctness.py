"""Correctness gate: do the compared variants produce the same greedy tokens?"""

from __future__ import annotations

from pathlib import PurePath


def gate_prompts(correctness: dict, images: dict[str, dict], vision: bool) -> list[dict]:
    """The gate's prompts: what is sent to the engine, and the label reports show.

    images: each configured image -> {"device_path", "sha256"} (staged on the device).

    A vision model also gets every `correctness.image_prompts` entry, sent in MNN's
    multimodal prompt syntax (`<img>path on the device</img>text`), so the treatment's
    kernels run the vision encoder too.
    """
    prompts = [{"label": p, "sent": p} for p in correctness["prompts"]]
    if not vision:
        return prompts
    image_prompts = correctness.get("image_prompts", [])
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


def leading_agreement(reference: list[int], candidate: list[int]) -> tuple[int, int | None]:
    """Number of leading tokens that agree, and the index of the first divergence (or None)."""
    for i, (a, b) in enumerate(zip(reference, candidate, strict=False)):
        if a != b:
            return i, i
    if len(reference) != len(candidate):
        return min(len(reference), len(candidate)), min(len(reference), len(candidate))
    return len(reference), None


def compare_answers(baseline: dict, treatment: dict, min_agreement: float) -> dict:
    """baseline/treatment: greedy runner payloads. Returns per-prompt rows and pass/fail."""
    rows = []
    base_answers = {a["prompt"]: a["tokens"] for a in baseline["answers"]}
    for answer in treatment["answers"]:
        ref = base_answers.get(answer["prompt"])
        if ref is None:
            raise ValueError(f"prompt {answer['prompt']!r} missing from the baseline run")
        agree, first = leading_agreement(ref, answer["tokens"])
        share = agree / max(len(ref), 1)
        rows.append(
            {
                "prompt": answer["prompt"],
                "tokens": len(ref),
                "agree": agree,
                "agreement": share,
                "first_divergence": first,
                "baseline_tokens": ref,
                "treatment_tokens": answer["tokens"],
                "crashed": answer.get("crashed") or None,
                "passed": share >= min_agreement and not answer.get("crashed"),
            }
        )
    return {
        "passed": all(r["passed"] for r in rows),
        "min_agreement": min_agreement,
        "prompts": rows,
    }
