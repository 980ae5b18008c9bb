"""Where an interval lies against a boundary: the one definition every verdict, every check
and the stopping rule judge by.

An interval [low, high] lies `above` a boundary when its low end is at or above it, `below`
when its high end is at or below it, and `holds` it when the boundary lies strictly inside.
A row is settled when it holds none of its verdict's boundaries; a word that takes a side
(shown, contradicted, reproduced, regression, ...) is given only to an interval that lies on
that side, so the same interval never gets a one-sided word at an estimate of 1.01 and the
opposite one at 0.99. Works on numbers and on numpy arrays of intervals alike.
"""

from __future__ import annotations

import numpy as np

ABOVE, BELOW, HOLDS = "above", "below", "holds"


def lies_above(low, high, boundary):
    """The whole interval at or above the boundary."""
    return low >= boundary


def lies_below(low, high, boundary):
    """The whole interval at or below the boundary."""
    return high <= boundary


def holds(low, high, boundary):
    """The boundary strictly inside the interval: the interval takes no side of it."""
    return (low < boundary) & (boundary < high)


def side(low: float, high: float, boundary: float) -> str:
    """ABOVE, BELOW or HOLDS (numbers only; a NaN end holds every boundary)."""
    if not np.isfinite([low, high]).all():
        return HOLDS
    if lies_above(low, high, boundary):
        return ABOVE
    if lies_below(low, high, boundary):
        return BELOW
    return HOLDS


def settled(low: float, high: float, boundaries) -> bool:
    """No boundary of the verdict held: the verdict cannot change by narrowing the interval."""
    return all(side(low, high, b) != HOLDS for b in boundaries)


def three_way(low: float, high: float, boundary: float, words: tuple[str, str, str]) -> str:
    """The word for an interval against one boundary: words = (above, below, holds)."""
    return dict(zip((ABOVE, BELOW, HOLDS), words, strict=True))[side(low, high, boundary)]


def within(low, high, band_low, band_high):
    """The whole interval inside [band_low, band_high] (ends included): lies above the band's
    low end and below its high end. Numbers or arrays."""
    return lies_above(low, high, band_low) & lies_below(low, high, band_high)


def outside(low, high, band_low, band_high):
    """The whole interval outside the band: below its low end or above its high end."""
    return lies_below(low, high, band_low) | lies_above(low, high, band_high)


def aa_stable(low, high, margin: float):
    """The A/A rule: the CI of the baseline's ratio to itself lies within [1/(1+m), 1+m].
    Works on numbers (the summary) and on arrays of simulated CIs (the calibration)."""
    return within(low, high, 1 / (1 + margin), 1 + margin)


def aa_drifted(low, high, margin: float):
    """The A/A control's CI wholly outside [1/(1+m), 1+m]: a drift, order or warm-up effect."""
    return outside(low, high, 1 / (1 + margin), 1 + margin)
