"""Correctness gate: do the compared variants produce the same greedy tokens?"""

from __future__ import annotations


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
