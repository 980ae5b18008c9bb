"""The emulated devices' check: greedy answers of every device against a reference device,
teacher-forced where the records hold it (every device fed the reference device's tokens of
the same variant, every step judged: correctness.TEACHER_FORCED_RULE), else at the first
divergence of the free-running answers (NEAR_TIE_RULE).
"""

from __future__ import annotations

import pandas as pd

from mnnrepro.analysis.correctness import TEACHER_FORCED_RULE, judgements
from mnnrepro.analysis.divergence import (
    CRASHED,
    DEFAULT_RULE,
    IDENTICAL,
    NEAR_TIE_RULE,
    ROUNDING,
    WRONG,
    GateRule,
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
    rows = []
    for device in sorted(greedy):
        fact = facts[device]
        for variant, payload in sorted(greedy[device].items()):
            ref = {a["prompt"]: a for a in greedy[reference][variant]["answers"]}
            forced = payload.get("teacher_forced_by_device", {}).get(reference)
            fed = {a["prompt"]: a for a in forced or []}
            where = {
                "model": model,
                "device": device,
                "reference": reference,
                "emulated": fact.get("emulated", False),
                "cpu": fact.get("cpu", "host"),
                "sme_vector_length_bits": fact.get("sme_vector_length_bits"),
                "sme2": fact.get("sme2"),
                "variant": variant,
                "env": " ".join(f"{k}={v}" for k, v in sorted(payload.get("env", {}).items())),
            }
            teacher_forced = forced is not None
            rows += [
                agreement_row(where, payload, answer, ref, fed, teacher_forced, rule)
                for answer in payload["answers"]
            ]
    return pd.DataFrame(rows)


def agreement_row(where, payload, answer, ref, fed, teacher_forced: bool, rule) -> dict:
    """One answer of a variant on a device (where: the device's and variant's columns) against
    the reference device's answer to the same prompt (ref, by prompt; fed: the answers given
    the reference's tokens)."""
    prompt = answer["prompt"]
    free, judged = judgements(ref.get(prompt), answer, rule, teacher_forced, fed.get(prompt))
    return {
        **where,
        "prompt": prompt,
        "tokens": free["tokens"],
        "agree": free["agree"],
        "first_divergence": free["first_divergence"],
        "teacher_forced": teacher_forced,
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


def judging_rule(tables: list[pd.DataFrame]) -> str:
    """How the rows were judged: teacher-forced, at the first divergence, or (records from
    before teacher forcing) both, by device. The reference device compared with itself, and a
    crash, are never teacher-forced."""
    rows = pd.concat(tables, ignore_index=True)
    if "teacher_forced" not in rows:
        rows["teacher_forced"] = False
    rows["teacher_forced"] = rows["teacher_forced"].fillna(False).astype(bool)
    judged = rows[(rows["device"] != rows["reference"]) & (rows["judged"] != CRASHED)]
    if judged.empty or judged["teacher_forced"].all():
        rule = TEACHER_FORCED_RULE
    elif not judged["teacher_forced"].any():
        rule = f"Judged at the first divergence: {NEAR_TIE_RULE}"
    else:
        free = sorted(set(judged[~judged["teacher_forced"]]["device"]))
        rule = (
            f"{TEACHER_FORCED_RULE} Devices {free} have records from before teacher forcing: "
            f"judged at the first divergence of their free-running answers: {NEAR_TIE_RULE}"
        )
    return rule + (
        " The reference device's own rows compare it with itself; a crashed answer is "
        "counted as crashed, not judged."
    )


def emulation_section(tables: list[pd.DataFrame]) -> list[str]:
    references = sorted({r for table in tables for r in table["reference"].dropna()})
    rule = judging_rule(tables)
    out = [
        "",
        "## Emulated SME2 checks (QEMU)",
        "",
        f"Greedy tokens of every device compared with the reference device "
        f"({', '.join(f'`{r}`' for r in references)}), per variant and prompt. {rule} "
        "Emulated timings are recorded but never judged.",
        "",
        "| model | device | variant | SME vector length | sme2 | identical | rounding | "
        "wrong | crashed | earliest divergence |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for table in tables:
        order = table.assign(vl=table["sme_vector_length_bits"].fillna(0))
        groups = sorted(
            order.groupby(["model", "device", "variant"]),
            key=lambda kv: (kv[0][0], kv[1]["vl"].iloc[0], kv[0][1], kv[0][2]),
        )
        for (model, device, variant), g in groups:
            forced = bool(g["teacher_forced"].fillna(False).astype(bool).all())
            column = "first_top1_difference" if forced else "first_divergence"
            first = g[column].dropna()
            vl = g["sme_vector_length_bits"].iloc[0]
            vl_text = "-" if pd.isna(vl) else f"{int(vl)} bits"
            first_text = "-" if first.empty else f"token {int(first.min())}"
            kinds = g["judged"].value_counts() if "judged" in g else pd.Series(dtype=int)
            counts = " | ".join(
                f"{int(kinds.get(kind, 0))}/{len(g)}"
                for kind in (IDENTICAL, ROUNDING, WRONG, CRASHED)
            )
            out.append(
                f"| {model} | {device} | {variant} | {vl_text} | "
                f"{'yes' if g['sme2'].iloc[0] else 'no'} | {counts} | {first_text} |"
            )
    return out
