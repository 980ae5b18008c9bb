"""Validity checks of one device x model comparison, each with its evidence."""

from __future__ import annotations

from mnnrepro.correctness import compare_answers


def correctness_check(greedy: dict, comparison: dict, correctness: dict) -> dict:
    base, treat = comparison["baseline"], comparison["treatment"]
    result = compare_answers(greedy[base], greedy[treat], correctness["min_agreement"])
    parts = []
    for row in result["prompts"]:
        where = (
            "identical"
            if row["first_divergence"] is None
            else f"first divergence at token {row['first_divergence']}"
        )
        parts.append(
            f"{row['prompt']!r}: {row['agree']}/{row['tokens']} leading tokens agree ({where})"
        )
    return {
        "name": "correctness gate (greedy tokens, treatment vs baseline)",
        "passed": result["passed"],
        "evidence": "; ".join(parts) + f"; required agreement {result['min_agreement']:.0%}",
        "details": result,
    }


def runtime_features_check(greedy: dict, comparison: dict) -> dict:
    lines = {
        v: greedy[v]["engine"].get("device_supports", "")
        for v in (comparison["baseline"], comparison["treatment"])
    }
    captured = all(lines.values())
    return {
        "name": "engine feature line captured",
        "passed": captured,
        "evidence": "; ".join(f"{v}: {line or 'missing'}" for v, line in lines.items()),
        "details": lines,
    }


def check(greedy: dict, facts: dict, model: str, comparison: dict, correctness: dict) -> dict:
    return {
        "device": facts["device"],
        "model": model,
        "checks": [
            correctness_check(greedy, comparison, correctness),
            runtime_features_check(greedy, comparison),
        ],
    }
