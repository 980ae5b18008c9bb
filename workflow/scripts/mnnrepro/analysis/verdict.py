"""The claim verdict: a pre-registered rule, applied to the CI of the gain (speedup - 1)."""

from __future__ import annotations

from mnnrepro.sides import outside, three_way, within

REPRODUCED = "reproduced"


NOT_REPRODUCED = "not reproduced"


INCONCLUSIVE = "inconclusive"


INVALID = "invalid"


NO_CLAIM = "no claim"


RULE = (
    "With a claimed gain c and tolerance t, the band is [c - t, c + t]. "
    "`reproduced`: the whole CI of the measured gain lies inside the band. "
    "`not reproduced`: the CI lies wholly outside the band (entirely below or above it). "
    "`inconclusive`: the CI holds an edge of the band (the edge lies strictly inside the CI; "
    "a CI that ends exactly on an edge lies on the side it reaches, as the stopping rule "
    "judges it settled). "
    "`invalid`: a validity check failed (the correctness gate found a wrong, empty or crashed "
    "answer, SME2 kernels are missing, a run-time mask did not take, or the A/A control "
    "is not within +-`comparison.aa_margin` in a phase), whatever the speed. Emulated "
    "devices' timings never enter a speedup or a verdict."
)


def claim_verdict(gain_low: float, gain_high: float, claim: float | None, tolerance: float) -> str:
    if claim is None:
        return NO_CLAIM
    band_low, band_high = claim - tolerance, claim + tolerance
    if within(gain_low, gain_high, band_low, band_high):
        return REPRODUCED
    if outside(gain_low, gain_high, band_low, band_high):
        return NOT_REPRODUCED
    return INCONCLUSIVE


NO_REGRESSION = "no regression"


REGRESSION = "regression"


FALLBACK_RULE = (
    "Fallback check (the treatment needs SME2, the device has none): `no regression` when the "
    "whole CI of the gain is at or above -t, `regression` when it lies wholly below -t, "
    "`inconclusive` otherwise."
)


def fallback_verdict(gain_low: float, gain_high: float, tolerance: float) -> str:
    return three_way(gain_low, gain_high, -tolerance, (NO_REGRESSION, REGRESSION, INCONCLUSIVE))


NO_DIFFERENCE = "no difference"


DIFFERS = "differs"


EQUALITY_RULE = (
    "Equality check (SME2 cannot exist where the builds run, e.g. an x86 host: MNN_SME2=ON "
    "builds no SME2 kernel there, so both builds run the same code): `no difference` when the "
    "whole CI of the gain lies within [-t, +t], `differs` when it lies wholly outside, "
    "`inconclusive` otherwise. No claim is judged."
)


def equality_verdict(gain_low: float, gain_high: float, tolerance: float) -> str:
    verdict = claim_verdict(gain_low, gain_high, 0.0, tolerance)
    return {REPRODUCED: NO_DIFFERENCE, NOT_REPRODUCED: DIFFERS}.get(verdict, verdict)


def final_verdict(speed_verdict: str, failed_checks: list[str]) -> tuple[str, str]:
    """Combine the speed verdict with validity; returns (verdict, reason).

    (Emulated devices never get here: summarize() leaves their timings out of speedups.)
    """
    if failed_checks:
        return INVALID, "; ".join(failed_checks)
    return speed_verdict, ""
