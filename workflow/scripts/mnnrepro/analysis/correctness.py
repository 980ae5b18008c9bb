"""Correctness gate: do the compared variants produce the same greedy tokens? How answers
are judged; what the gate asks a device and how its answers are labelled is
runs/greedy.py's."""

from __future__ import annotations

from mnnrepro.analysis.divergence import (
    CRASHED,
    DEFAULT_RULE,
    IDENTICAL,
    NEAR_TIE_RULE,
    NO_OUTPUT,
    PASSING,
    ROUNDING,
    UNJUDGED,
    WRONG,
    GateRule,
    _divergence_text,
    _logit_diffs_sd,
    judge_divergence,
    logit_drift_sd,
)


def leading_agreement(reference: list[int], candidate: list[int]) -> tuple[int, int | None]:
    """Number of leading tokens that agree, and the index of the first divergence (or None)."""
    for i, (a, b) in enumerate(zip(reference, candidate, strict=False)):
        if a != b:
            return i, i
    if len(reference) != len(candidate):
        return min(len(reference), len(candidate)), min(len(reference), len(candidate))
    return len(reference), None


def compare_answer(reference: dict | None, other: dict, near_tie_sd: float) -> dict:
    """One prompt: how `other`'s greedy answer relates to the reference's."""
    ref_tokens = (reference or {}).get("tokens", [])
    tokens = other.get("tokens", [])
    agree, first = leading_agreement(ref_tokens, tokens)
    row = {
        "agree": agree,
        "first_divergence": first,
        "tokens": len(ref_tokens),
        "logit_drift_sd": logit_drift_sd(
            (reference or {}).get("steps") or [], other.get("steps") or [], agree
        ),
    }
    if reference is None or reference.get("crashed"):
        why = (reference or {}).get("crashed", "no answer")
        return {**row, "kind": CRASHED, "reason": f"the reference crashed: {why}"}
    if other.get("crashed"):
        return {**row, "kind": CRASHED, "reason": f"crashed: {other['crashed']}"}
    empty = [name for name, t in (("reference", ref_tokens), ("engine", tokens)) if not t]
    if empty:
        return {**row, "kind": NO_OUTPUT, "reason": f"the {' and '.join(empty)} produced no output"}
    if first is None:
        return {**row, "kind": IDENTICAL, "reason": ""}
    if first >= min(len(ref_tokens), len(tokens)):
        return {
            **row,
            "kind": NO_OUTPUT,
            "reason": f"stopped early: {len(tokens)} of {len(ref_tokens)} tokens",
        }
    ref_steps, steps = reference.get("steps") or [], other.get("steps") or []
    if first >= len(ref_steps) or first >= len(steps):
        return {**row, "kind": UNJUDGED, "reason": "no logits recorded"}
    judged = judge_divergence(ref_steps[first], steps[first], near_tie_sd)
    return {**row, **judged, "reason": _divergence_text(first, judged)}


TEACHER_FORCED_RULE = (
    "Teacher-forced: both engines are fed the reference engine's token sequence (the prompt, "
    "then the reference's greedy tokens), and every step is compared in that same context: "
    "the top-1 token, and the logits of every token both engines rank in their top-k, in "
    "standard deviations of the reference's logits. `identical`: every top-1 agrees and the "
    "logits stay within `correctness.max_logit_diff_sd`; `equivalent within rounding`: every "
    "step whose top-1 differs is a near-tie for both engines (margins within "
    "`correctness.near_tie_sd`), at most a share `correctness.max_flip_share` of the steps "
    "differ, and the logits stay within the bound; otherwise `wrong`. "
    "A wrong kernel that misbehaves only late in the answer is caught at its step."
)


# a teacher-forced comparison's columns before any step is compared
FORCED_ROW = {
    "steps_compared": 0,
    "max_logit_diff_sd": None,
    "first_top1_difference": None,
    "differing_steps": 0,
    "reference_margin": None,
    "other_margin": None,
}


def compare_forced(
    reference: dict | None, forced: dict | None, rule: GateRule = DEFAULT_RULE
) -> dict:
    """One prompt, teacher-forced (TEACHER_FORCED_RULE): `forced` is the other engine's
    answer when fed the reference's tokens; every step is compared."""
    ref_tokens = (reference or {}).get("tokens") or []
    row = dict(FORCED_ROW)
    unusable = forced_unusable(reference, forced, ref_tokens)
    if unusable is not None:
        return {**row, **unusable}
    ref_steps, steps = reference.get("steps") or [], forced.get("steps") or []
    diffs, wrong_at = [], None
    for i in range(len(ref_tokens)):
        diffs += _logit_diffs_sd(ref_steps[i], steps[i])
        if int(steps[i]["top"][0][0]) == int(ref_tokens[i]):
            continue
        row["differing_steps"] += 1
        judged = judge_divergence(ref_steps[i], steps[i], rule.near_tie_sd)
        if row["first_top1_difference"] is None:
            row["first_top1_difference"] = i
            row["reference_margin"] = judged["reference_margin"]
            row["other_margin"] = judged["other_margin"]
        if judged["kind"] == WRONG and wrong_at is None:
            wrong_at = (i, judged)
    row["steps_compared"] = len(ref_tokens)
    row["max_logit_diff_sd"] = max(diffs) if diffs else None
    if wrong_at is not None:
        i, judged = wrong_at
        return {**row, "kind": WRONG, "reason": _divergence_text(i, judged)}
    return {**row, **forced_verdict(row, rule)}


def forced_verdict(row: dict, rule: GateRule) -> dict:
    """A teacher-forced prompt without a wrong step: wrong where its logits drift beyond the
    bound or too many steps flip a near-tie, rounding where a few do, else identical."""
    steps, drift = row["steps_compared"], row["max_logit_diff_sd"]
    if drift is not None and drift > rule.max_logit_diff_sd:
        return {
            "kind": WRONG,
            "reason": f"logits differ by up to {drift:.3g} SDs over {steps} steps "
            f"(bound {rule.max_logit_diff_sd:g})",
        }
    if row["differing_steps"] > rule.max_flip_share * steps:
        return {
            "kind": WRONG,
            "reason": f"{row['differing_steps']} of {steps} steps flip a near-tie "
            f"(more than the bound {rule.max_flip_share:g} of the steps: two correct kernels "
            "flip a few near-ties, not many); logits within "
            f"{'-' if drift is None else f'{drift:.3g}'} SDs",
        }
    if row["differing_steps"]:
        first = row["first_top1_difference"]
        return {
            "kind": ROUNDING,
            "reason": f"{row['differing_steps']} of {steps} steps flip a near-tie "
            f"(first at step {first}); logits within {drift:.3g} SDs",
        }
    return {"kind": IDENTICAL, "reason": ""}


def forced_unusable(reference: dict | None, forced: dict | None, ref_tokens: list) -> dict | None:
    """Why a teacher-forced answer cannot be compared step by step (a crash, no output, other
    tokens fed, too few steps, no logits), as the row's kind and reason; None where it can."""
    if reference is None or reference.get("crashed"):
        why = (reference or {}).get("crashed", "no answer")
        return {"kind": CRASHED, "reason": f"the reference crashed: {why}"}
    if not ref_tokens:
        return {"kind": NO_OUTPUT, "reason": "the reference produced no output"}
    if forced is None:
        return {"kind": NO_OUTPUT, "reason": "no teacher-forced answer was recorded"}
    if forced.get("crashed"):
        return {"kind": CRASHED, "reason": f"crashed when fed the reference: {forced['crashed']}"}
    fed = forced.get("forced_tokens")
    if fed is not None and list(fed) != list(ref_tokens[: len(fed)]):
        return {"kind": WRONG, "reason": "was fed other tokens than the reference's"}
    ref_steps, steps = reference.get("steps") or [], forced.get("steps") or []
    if len(steps) < len(ref_tokens):
        return {
            "steps_compared": len(steps),
            "kind": NO_OUTPUT,
            "reason": f"stopped early: {len(steps)} of {len(ref_tokens)} steps",
        }
    if len(ref_steps) < len(ref_tokens):
        return {"kind": UNJUDGED, "reason": "no logits recorded"}
    return None


def compare_answers(
    baseline: dict,
    treatment: dict,
    min_agreement: float,
    rule: GateRule = DEFAULT_RULE,
    forced: list[dict] | None = None,
) -> dict:
    """baseline/treatment: greedy runner payloads; forced: the treatment's teacher-forced
    answers on the baseline's tokens (None: records from before teacher forcing). Returns
    per-prompt rows and pass/fail.

    With forced answers every step is judged (TEACHER_FORCED_RULE) and decides; the
    free-running comparison stays in the row (`free_*`) for the report. Without them a prompt
    passes when the free-running answers are identical or first diverge at a near-tie
    (NEAR_TIE_RULE), which looks no further than that divergence. A `wrong`, empty or crashed
    answer always fails. `min_agreement` (a share of the reference's leading tokens) decides
    only where the records hold no logits to tell rounding from a wrong answer.
    """
    base_answers = {a["prompt"]: a for a in baseline["answers"]}
    forced_by_prompt = {a["prompt"]: a for a in forced or []}
    rows = []
    for answer in treatment["answers"]:
        if answer["prompt"] not in base_answers:
            raise ValueError(f"prompt {answer['prompt']!r} missing from the baseline run")
        fed = forced_by_prompt.get(answer["prompt"])
        ref = base_answers[answer["prompt"]]
        rows.append(prompt_row(ref, answer, rule, min_agreement, forced is not None, fed))
    return {
        "passed": all(r["passed"] for r in rows),
        "min_agreement": min_agreement,
        "near_tie_sd": rule.near_tie_sd,
        "max_logit_diff_sd": rule.max_logit_diff_sd,
        "max_flip_share": rule.max_flip_share,
        "rule": TEACHER_FORCED_RULE if forced is not None else NEAR_TIE_RULE,
        "prompts": rows,
    }


def prompt_row(
    ref: dict, answer: dict, rule: GateRule, min_agreement: float, teacher_forced: bool, fed
) -> dict:
    """One prompt's row of compare_answers: the free-running comparison, and with teacher
    forcing (fed: the treatment's answer on the reference's tokens, None if it gave none)
    the step-by-step judgement that decides."""
    free, judged = judgements(ref, answer, rule, teacher_forced, fed)
    if teacher_forced:
        judged = {
            **{f"free_{k}": free[k] for k in ("kind", "reason")},
            **{k: free[k] for k in ("agree", "first_divergence", "tokens", "logit_drift_sd")},
            **judged,
        }
    share = free["agree"] / max(free["tokens"], 1)
    failed_kind = judged["kind"] in (CRASHED, NO_OUTPUT, WRONG)
    return {
        "prompt": answer["prompt"],
        **judged,
        "teacher_forced": teacher_forced,
        "agreement": share,
        "baseline_tokens": ref.get("tokens", []),
        "treatment_tokens": answer.get("tokens", []),
        "crashed": answer.get("crashed") or None,
        "passed": judged["kind"] in PASSING or (share >= min_agreement and not failed_kind),
    }


def judgements(ref, answer: dict, rule: GateRule, teacher_forced: bool, fed) -> tuple[dict, dict]:
    """An answer against the reference's: the free-running comparison (NEAR_TIE_RULE), and
    the judgement that decides, the teacher-forced one (fed: the answer on the reference's
    tokens) where there is teacher forcing, else the same."""
    free = compare_answer(ref, answer, rule.near_tie_sd)
    return free, (compare_forced(ref, fed, rule) if teacher_forced else free)
