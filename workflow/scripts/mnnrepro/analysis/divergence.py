"""How one step of two answers is judged: the outcome words, the gate's thresholds (GateRule, the
schema's defaults), and a divergence judged by the margins and logits of both engines."""

from __future__ import annotations

from dataclasses import dataclass

from mnnrepro.sections import Correctness

IDENTICAL = "identical"


ROUNDING = "equivalent within rounding"


WRONG = "wrong"


NO_OUTPUT = "no output"


CRASHED = "crashed"


UNJUDGED = "differs (no logits to tell rounding from a wrong answer)"


PASSING = (IDENTICAL, ROUNDING)


NEAR_TIE_SD = 0.25  # the schema's default of `correctness.near_tie_sd`


MAX_LOGIT_DIFF_SD = 1.0  # the schema's default of `correctness.max_logit_diff_sd`


MAX_FLIP_SHARE = 0.25  # the schema's default of `correctness.max_flip_share`


@dataclass(frozen=True)
class GateRule:
    """The thresholds of the teacher-forced gate (TEACHER_FORCED_RULE), as the config's
    `correctness` section sets them; the defaults are the schema's."""

    near_tie_sd: float = NEAR_TIE_SD
    max_logit_diff_sd: float = MAX_LOGIT_DIFF_SD
    max_flip_share: float = MAX_FLIP_SHARE

    @classmethod
    def of(cls, correctness: Correctness) -> GateRule:
        return cls(
            correctness.near_tie_sd, correctness.max_logit_diff_sd, correctness.max_flip_share
        )


DEFAULT_RULE = GateRule()


NEAR_TIE_RULE = (
    "At the first token where the two answers differ, both engines have seen the same context. "
    "The reference chose token a, the other engine token b. The divergence is `equivalent "
    "within rounding` when both engines call it a near-tie: the reference's logit of a exceeds "
    "its logit of b by at most `correctness.near_tie_sd` standard deviations of the reference's "
    "logits at that step, and the other engine's logit of b exceeds its logit of a by at most "
    "as much (both tokens among each engine's recorded top-k). Otherwise it is `wrong`: one "
    "engine was confident in a token the other rejected (a broken kernel, e.g. SME2 at an "
    "unsupported vector length, or MNN #4828's garbage). Two correct kernels that accumulate "
    "in a different order can only flip near-ties. Tokens after a near-tie flip continue "
    "different contexts and are not compared."
)


def _margin(step: dict, chosen: int, rival: int) -> float | None:
    """How far `chosen` leads `rival` in one step's top-k logits; None when either is not in
    the top-k or a logit is not finite (then it is no near-tie)."""
    top = {int(t): v for t, v in step.get("top", [])}
    if top.get(chosen) is None or top.get(rival) is None:
        return None
    return top[chosen] - top[rival]


def judge_divergence(ref_step: dict, other_step: dict, near_tie_sd: float) -> dict:
    """Classify the first divergence from the two engines' logits at that step."""
    ref_token, other_token = int(ref_step["top"][0][0]), int(other_step["top"][0][0])
    scale = ref_step.get("sd")
    ref_margin = _margin(ref_step, ref_token, other_token)
    other_margin = _margin(other_step, other_token, ref_token)
    tolerance = near_tie_sd * scale if scale is not None else None
    near = (
        tolerance is not None
        and ref_margin is not None
        and other_margin is not None
        and ref_margin <= tolerance
        and other_margin <= tolerance
    )
    return {
        "kind": ROUNDING if near else WRONG,
        "reference_margin": ref_margin,
        "other_margin": other_margin,
        "logit_sd": scale,
        "tolerance": tolerance,
    }


def _logit_diffs_sd(ref_step: dict, step: dict) -> list[float]:
    """|logit difference| of every token in both engines' top-k at one step, in the
    reference's logit SDs."""
    top = {int(t): v for t, v in step.get("top", []) if v is not None}
    scale = ref_step.get("sd") or 0
    return [
        abs(value - top[int(token)]) / scale
        for token, value in ref_step.get("top", [])
        if value is not None and int(token) in top and scale > 0
    ]


def logit_drift_sd(ref_steps: list[dict], steps: list[dict], upto: int) -> float | None:
    """Largest |logit difference| of a token in both engines' top-k over the steps both saw
    the same context (before the first divergence), in the reference's logit SDs: how far
    the two engines' arithmetic differs where it did not change the answer."""
    drifts = [
        drift
        for ref, other in zip(ref_steps[:upto], steps[:upto], strict=False)
        for drift in _logit_diffs_sd(ref, other)
    ]
    return max(drifts) if drifts else None


def _divergence_text(first: int, judged: dict) -> str:
    def num(x):
        return "not in top-k" if x is None else f"{x:.3g}"

    return (
        f"first divergence at token {first}: margins {num(judged['reference_margin'])} "
        f"(reference) and {num(judged['other_margin'])} (other) vs tolerance "
        f"{num(judged['tolerance'])} (logit SD {num(judged['logit_sd'])})"
    )
