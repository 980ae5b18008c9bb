"""The emulated devices' check: greedy answers of every device against a reference device,
each divergence judged by the correctness gate's near-tie rule.
"""

from __future__ import annotations

from mnnrepro.analysis.correctness import NEAR_TIE_SD, compare_answer


def agreement_table(
    greedy: dict[str, dict],
    facts: dict[str, dict],
    reference: str,
    model: str,
    near_tie_sd: float = NEAR_TIE_SD,
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
            for answer in payload["answers"]:
                judged = compare_answer(ref.get(answer["prompt"]), answer, near_tie_sd)
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
                        "tokens": judged["tokens"],
                        "agree": judged["agree"],
                        "first_divergence": judged["first_divergence"],
                        "identical": judged["first_divergence"] is None,
                        "judged": judged["kind"],
                        "logit_drift_sd": judged["logit_drift_sd"],
                        "reason": judged["reason"],
                        "crashed": answer.get("crashed", ""),
                        "engine_line": payload["engine"].get("device_supports", ""),
                        "cpu_target": payload["engine"].get("cpu_target", ""),
                    }
                )
    return pd.DataFrame(rows)
