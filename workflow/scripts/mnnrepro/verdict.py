"""The claim verdict: a pre-registered rule, applied to the CI of the gain (speedup - 1)."""

from __future__ import annotations

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
INVALID = "invalid"
NO_CLAIM = "no claim"
NOT_COUNTED = "not counted"

RULE = (
    "With a claimed gain c and tolerance t, the band is [c - t, c + t]. "
    "`reproduced`: the whole CI of the measured gain lies inside the band. "
    "`not reproduced`: the CI lies wholly outside the band (entirely below or above it). "
    "`inconclusive`: the CI overlaps the band and also reaches outside it. "
    "`invalid`: a validity check failed (e.g. the variants' greedy outputs differ), whatever "
    "the speed. `not counted`: timings from an emulated device, which never enter a verdict."
)


def claim_verdict(gain_low: float, gain_high: float, claim: float | None, tolerance: float) -> str:
    if claim is None:
        return NO_CLAIM
    band_low, band_high = claim - tolerance, claim + tolerance
    if band_low <= gain_low and gain_high <= band_high:
        return REPRODUCED
    if gain_high < band_low or gain_low > band_high:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def final_verdict(speed_verdict: str, failed_checks: list[str], emulated: bool) -> tuple[str, str]:
    """Combine the speed verdict with validity; returns (verdict, reason)."""
    if emulated:
        return NOT_COUNTED, "emulated device: timings are recorded but never judged"
    if failed_checks:
        return INVALID, "; ".join(failed_checks)
    return speed_verdict, ""
