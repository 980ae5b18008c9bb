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
    images = sum(1 for a in greedy[treat]["answers"] if a.get("image_sha256"))
    parts.append(
        f"{images} image prompt(s) through the vision encoder"
        if images
        else "no image prompt (text-only model)"
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


def kernel_checks(
    greedy: dict, comparison: dict, engines: dict[str, dict], variants: dict, facts: dict
) -> list[dict]:
    """Did the treatment's SME2 kernels exist (build) and could they run (device line)?"""
    base = engines[variants[comparison["baseline"]]["engine"]]
    treat = engines[variants[comparison["treatment"]]["engine"]]
    if "build" not in (base.get("kind"), treat.get("kind")):
        return []  # prebuilt engines: the comparison is not about SME2 kernels
    count = {
        name: rec.get("sme2", {}).get("sme2_symbol_count", 0)
        for name, rec in (("treatment", treat), ("baseline", base))
    }
    checks = [
        {
            "name": "SME2 kernels in the builds (static)",
            "passed": count["treatment"] > 0 and count["baseline"] == 0,
            "evidence": f"treatment {treat['engine']}: {count['treatment']} MNN *_SME2* kernels; "
            f"baseline {base['engine']}: {count['baseline']}",
            "details": count,
        }
    ]
    line = greedy[comparison["treatment"]]["engine"].get("device_supports", "")
    if facts.get("sme2"):
        checks.append(
            {
                "name": "SME2 available to the treatment at run time",
                "passed": "sme2: 1" in line,
                "evidence": f"treatment printed {line or 'no feature line'!r}",
                "details": {"line": line},
            }
        )
    return checks


def check(
    greedy: dict,
    facts: dict,
    model: str,
    comparison: dict,
    correctness: dict,
    engines: dict[str, dict] | None = None,
    variants: dict | None = None,
) -> dict:
    checks = [
        correctness_check(greedy, comparison, correctness),
        runtime_features_check(greedy, comparison),
    ]
    if engines and variants:
        checks += kernel_checks(greedy, comparison, engines, variants, facts)
    return {"device": facts["device"], "model": model, "checks": checks}
