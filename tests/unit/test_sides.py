"""Every verdict-writing check words an interval by where it lies against its boundary, and
only by that (mnnrepro.sides): an interval that holds a boundary never gets a one-sided word,
whatever side its estimate is on, and the stopping rule calls exactly those rows settled that
the summary words on one side.

Each check is given, for each of its boundaries, intervals that hold it with the estimate just
above and just below it, and intervals wholly on either side; a check that read the estimate
(the mechanism's `consistent`/`contradicted` at 1.01/0.99, before) or compared one end the
other way fails here."""

from __future__ import annotations

import numpy as np
import pytest

from mnnrepro import sides
from mnnrepro.analysis import verdict as vd
from mnnrepro.analysis.aa_control import aa_problems
from mnnrepro.analysis.mechanism import NEAR_CEILING, ceiling_check, gain_order_check
from mnnrepro.runs.stopping_rows import row_state

HALF = 0.05  # half-width of the test intervals


def around(boundary: float) -> dict[str, tuple[float, float]]:
    """Intervals by where they lie against the boundary; the holding ones with the interval's
    middle (its estimate) on either side of it."""
    return {
        "holds, estimate above": (boundary - HALF + 0.01, boundary + HALF + 0.01),
        "holds, estimate below": (boundary - HALF - 0.01, boundary + HALF - 0.01),
        "above": (boundary + 0.01, boundary + 0.01 + 2 * HALF),
        "below": (boundary - 0.01 - 2 * HALF, boundary - 0.01),
    }


def test_side_is_decided_by_the_ends_alone():
    for name, (low, high) in around(1.0).items():
        expected = {"above": sides.ABOVE, "below": sides.BELOW}.get(name, sides.HOLDS)
        assert sides.side(low, high, 1.0) == expected, name
    assert sides.side(1.0, 1.2, 1.0) == sides.ABOVE  # touching is not holding
    assert sides.side(0.8, 1.0, 1.0) == sides.BELOW
    assert sides.side(float("nan"), 1.2, 1.0) == sides.HOLDS
    low, high = np.array([0.9, 1.01]), np.array([1.1, 1.2])
    assert list(sides.holds(low, high, 1.0)) == [True, False]  # arrays, for the calibration


@pytest.mark.parametrize("claim", [0.81, 0.13, 0.0])
def test_the_claim_verdict_takes_no_side_of_a_band_edge_it_holds(claim):
    tolerance = 0.1
    for edge in (claim - tolerance, claim + tolerance):
        for name, (low, high) in around(edge).items():
            got = vd.claim_verdict(low, high, claim, tolerance)
            if name.startswith("holds"):
                assert got == vd.INCONCLUSIVE, (edge, name)
            else:
                inside = claim - tolerance <= low and high <= claim + tolerance
                assert got == (vd.REPRODUCED if inside else vd.NOT_REPRODUCED), (edge, name)


def test_the_equality_and_fallback_verdicts_take_no_side_of_an_edge_they_hold():
    tolerance = 0.1
    for edge in (-tolerance, tolerance):
        for name, (low, high) in around(edge).items():
            got = vd.equality_verdict(low, high, tolerance)
            if name.startswith("holds"):
                assert got == vd.INCONCLUSIVE, (edge, name)
            else:
                assert got in (vd.NO_DIFFERENCE, vd.DIFFERS), (edge, name)
    words = {"above": vd.NO_REGRESSION, "below": vd.REGRESSION}
    for name, (low, high) in around(-tolerance).items():
        assert vd.fallback_verdict(low, high, tolerance) == words.get(name, vd.INCONCLUSIVE), name


def test_the_aa_control_calls_drift_only_an_interval_wholly_outside_its_margin():
    margin = 0.2  # a band wider than the test intervals: each of them meets one edge only
    for edge in (1 / (1 + margin), 1 + margin):
        for name, (low, high) in around(edge).items():
            problems = aa_problems({"prefill": {"ci_low": low, "ci_high": high}}, margin)
            inside = sides.within(low, high, 1 / (1 + margin), 1 + margin)
            assert bool(problems) != inside, (edge, name)
            if name.startswith("holds"):
                assert "not shown stable" in problems[0], (edge, name)
            elif problems:
                assert "drift" in problems[0], (edge, name)


def test_the_mechanism_check_takes_no_side_of_1_it_holds():
    prefill = {"gain": 0.5, "gain_ci_low": 0.4, "gain_ci_high": 0.6}
    decode = {"gain": 0.45, "gain_ci_low": 0.35, "gain_ci_high": 0.55}
    words = {"above": "shown", "below": "contradicted"}
    for name, (low, high) in around(1.0).items():
        ratio = float(np.sqrt(low * high))
        gap = {"ratio": ratio, "ci_low": low, "ci_high": high, "n_pairs": 10}
        got = gain_order_check(prefill, decode, gap)["status"]
        assert got == words.get(name, "inconclusive"), name


def test_the_ceiling_check_takes_no_side_of_its_threshold_it_holds():
    row = {
        "variant": "on",
        "decode_tps": 30.0,
        "decode_ceiling_tps": 40.0,
        "bandwidth_gb_per_s": 80.0,
        "decode_bytes_per_token": 2e9,
    }

    def status(low, high):
        share = {
            "decode_ceiling_share": (low + high) / 2,
            "decode_ceiling_share_low": low,
            "decode_ceiling_share_high": high,
        }
        return ceiling_check({**row, **share})["status"]

    words = {"above": "shown", "below": "not shown"}
    for name, (low, high) in around(NEAR_CEILING).items():
        assert status(low, high) == words.get(name, "inconclusive"), name
    for name, (low, high) in around(1.0).items():
        assert (status(low, high) == "broken bound") == (name == "above"), name


def test_the_stopping_rule_settles_exactly_the_rows_the_summary_words_on_one_side():
    """One definition of settled: a row whose interval holds a boundary of its verdict is
    unsettled (the run goes on), and the summary words that same interval `inconclusive`."""
    rng = np.random.default_rng(1)
    for shift in np.linspace(-0.08, 0.08, 17):
        logs = np.log(1.0 + shift) + rng.normal(0, 0.03, 8)

        def interval(x):
            return float(np.exp(x.mean() - 0.05)), float(np.exp(x.mean() + 0.05))

        state = row_state(logs, [1.0], None, interval)
        gap = {"ratio": float(np.exp(logs.mean())), "ci_low": state["low"], "n_pairs": 8}
        gap["ci_high"] = state["high"]
        word = gain_order_check(
            {"gain": 0, "gain_ci_low": 0, "gain_ci_high": 0},
            {"gain": 0, "gain_ci_low": 0, "gain_ci_high": 0},
            gap,
        )["status"]
        assert state["settled"] == (word != "inconclusive"), (shift, state, word)
