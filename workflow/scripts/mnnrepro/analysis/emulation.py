"""The emulated devices' check: greedy answers of every device against a reference device,
teacher-forced where the records hold it (every device fed the reference device's tokens of
the same variant, every step judged: correctness.TEACHER_FORCED_RULE), else at the first
divergence of the free-running answers (NEAR_TIE_RULE).
"""

from __future__ import annotations

from mnnrepro.analysis.correctness import (
    DEFAULT_RULE,
    IDENTICAL,
    GateRule,
    compare_answer,
    compare_forced,
)

FORCED_COLUMNS = (
    "steps_compared",
    "max_logit_diff_sd",
    "first_top1_difference",
    "differing_steps",
    "reference_margin",
    "other_margin",
)


def agreement_table(
    greedy: dict[str, dict],
    facts: dict[str, dict],
    reference: str,
    model: str,
    rule: GateRule = DEFAULT_RULE,
):
    """Greedy tokens of every device vs the reference device, per variant and prompt.

    With a reference without SME2 this is both checks of the emulated device: the fallback
    (a CPU with `sme=off` must agree) and the vector-length sweep (which SME vector lengths
    the SME2 kernels compute correctly at). Each divergence is judged by the correctness
    gate's near-tie rule: rounding, or a wrong answer.
    """
    import pandas as pd

    rows = []
    for device in sorted(greedy):
        for variant, payload in sorted(greedy[device].items()):
            ref = {a["prompt"]: a for a in greedy[reference][variant]["answers"]}
            forced = payload.get("teacher_forced_by_device", {}).get(reference)
            forced_by_prompt = {a["prompt"]: a for a in forced or []}
            for answer in payload["answers"]:
                free = compare_answer(ref.get(answer["prompt"]), answer, rule.near_tie_sd)
                judged = free
                if forced is not None:
                    judged = compare_forced(
                        ref.get(answer["prompt"]),
                        forced_by_prompt.get(answer["prompt"]),
                        rule,
                    )
                fact = facts[device]
                rows.append(
                    {
                        "model": model,
                        "device": device,
                        "reference": reference,
                        "emulated": fact.get("emulated", False),
                        "cpu": fact.get("cpu", "host"),
                        "sme_vector_length_bits": fact.get("sme_vector_length_bits"),
                        "sme2": fact.get("sme2"),
                        "variant": variant,
                        "env": " ".join(
                            f"{k}={v}" for k, v in sorted(payload.get("env", {}).items())
                        ),
                        "prompt": answer["prompt"],
                        "tokens": free["tokens"],
                        "agree": free["agree"],
                        "first_divergence": free["first_divergence"],
                        "teacher_forced": forced is not None,
                        **{k: judged.get(k) for k in FORCED_COLUMNS},
                        "identical": judged["kind"] == IDENTICAL,
                        "judged": judged["kind"],
                        "free_judged": free["kind"],
                        "logit_drift_sd": free["logit_drift_sd"],
                        "reason": judged["reason"],
                        "crashed": answer.get("crashed", ""),
                        "engine_line": payload["engine"].get("device_supports", ""),
                        "cpu_target": payload["engine"].get("cpu_target", ""),
                    }
                )
    return pd.DataFrame(rows)
