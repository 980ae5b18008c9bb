"""The statistics keep their promises, by simulation with the project's own functions
(mnnrepro.analysis.calibration; the full tables with more simulations are in
benchmarks/results/ci_coverage.md). Seeds are fixed, so these are deterministic."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import design_stats

from mnnrepro.analysis.calibration import (
    NOISE,
    aa_invalid_rate,
    coverage,
    stopping_coverage,
)
from mnnrepro.intervals import run_intervals
from mnnrepro.runs.precision import stopping_decision
from mnnrepro.stats import Interval, paired_ratio

T_95 = Interval("t", 0.95, None, 0, 0)  # Student t at 95 %
CHOSEN_95 = run_intervals(design_stats(ci_level=0.95), 10)  # a run's interval, at 95 %

SIMS = 2000


@pytest.mark.parametrize("noise", NOISE)
@pytest.mark.parametrize("n", [6, 10, 20])
def test_the_t_interval_keeps_its_level_at_small_n(n, noise):
    assert coverage("t", n, noise, SIMS, seed=n) >= 0.93


def test_the_percentile_bootstrap_it_replaces_did_not():
    assert coverage("bootstrap", 6, "lognormal", SIMS, seed=6) < 0.90


def test_the_aa_rule_rarely_calls_a_stable_run_invalid_and_catches_a_10_percent_drift():
    """Both phases judged, 10 blocks, 2 % noise per invocation, margin 0.05 (the default)."""
    assert aa_invalid_rate(10, drift=0.0, margin=0.05, sims=4000, seed=1) <= 0.05
    assert aa_invalid_rate(10, drift=0.10, margin=0.05, sims=4000, seed=2) >= 0.95


@pytest.mark.parametrize("noise", NOISE)
@pytest.mark.parametrize("n_min, target", [(6, 0.02), (6, 0.03), (10, 0.02)])
def test_stopping_at_a_target_half_width_keeps_coverage(noise, n_min, target):
    """10000 simulations: under drift the true coverage is ~0.935, too near 0.93 for the
    sampling error of 2000 (sd 0.006)."""
    result = stopping_coverage(n_min, 40, target, noise, 5 * SIMS, seed=3)
    assert result["coverage"] >= 0.93


def test_wilcoxon_is_the_exact_paired_test():
    base = np.array([10.0, 11, 12, 13, 14, 15])
    p = paired_ratio(base, base * 1.1, Interval("t", 0.95, None, 0, 0))["p_wilcoxon"]
    assert p == pytest.approx(2 / 2**6)  # all six pairs up: exact two-sided p
    assert paired_ratio(base, base, Interval("t", 0.95, None, 0, 0))["p_wilcoxon"] == 1.0


# ---- the stopping decision on raw records ---------------------------------------------------


def records(ratios, noise):
    """Raw records of two variants over len(ratios) blocks (the test's own numbers)."""
    out = []
    for block, (ratio, wobble) in enumerate(zip(ratios, noise, strict=True)):
        for variant, tps in (("off", 100.0), ("on", 100.0 * ratio * wobble)):
            out.append(
                {
                    "status": "ok",
                    "variant": variant,
                    "invocation": {"block": block},
                    "results": [
                        {"phase": "prefill", "tps": tps},
                        {"phase": "decode", "tps": tps / 10},
                    ],
                }
            )
    return out


PAIRS = [("off", "on")]
ON_DEMAND = {"min": 4, "max": 8, "target_half_width": 0.02}


def test_fixed_repetitions_stop_exactly_there():
    rs = records([1.3] * 5, [1.0] * 5)
    assert stopping_decision(rs, 4, 5, PAIRS, CHOSEN_95) is None
    assert stopping_decision(rs, 5, 5, PAIRS, CHOSEN_95)["reason"] == "fixed repetitions"


def test_precision_on_demand_stops_at_the_target_or_at_max_and_says_which():
    quiet = records([1.3] * 8, [1.0, 1.001, 0.999, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert stopping_decision(quiet, 3, ON_DEMAND, PAIRS, CHOSEN_95) is None  # before min
    stop = stopping_decision(quiet, 4, ON_DEMAND, PAIRS, CHOSEN_95)
    assert stop["reason"] == "target half-width 2.0% reached"
    assert set(stop["half_widths"]) == {"off/on prefill", "off/on decode"}
    noisy = records([1.3] * 8, [1.0, 1.2, 0.8, 1.1, 0.9, 1.2, 0.8, 1.0])
    assert stopping_decision(noisy, 5, ON_DEMAND, PAIRS, CHOSEN_95) is None
    stop = stopping_decision(noisy, 8, ON_DEMAND, PAIRS, CHOSEN_95)
    assert stop["reason"].startswith("max 8 blocks reached")
    # a function of the records: a resumed run decides the same
    assert stopping_decision(noisy, 8, ON_DEMAND, PAIRS, CHOSEN_95) == stop


def test_joint_stopping_waits_for_every_ci_and_says_when_the_target_was_missed():
    """Precision on demand with several judged CIs stops when all are narrow: more CIs need at
    least as many blocks; a quiet device stops at min and reaches the target, a noisy one runs
    to max and does not; coverage stays near nominal either way."""
    from mnnrepro.analysis.calibration import joint_stopping

    one = joint_stopping(6, 30, 0.03, 0.04, cis=1, sims=400, seed=1)
    six = joint_stopping(6, 30, 0.03, 0.04, cis=6, sims=400, seed=1)
    assert six["mean_blocks"] > one["mean_blocks"]
    quiet = joint_stopping(6, 30, 0.03, 0.002, cis=6, sims=200, seed=2)
    assert quiet["mean_blocks"] == 6 and quiet["reached_target"] == 1.0
    noisy = joint_stopping(6, 30, 0.03, 0.3, cis=6, sims=200, seed=3)
    assert noisy["mean_blocks"] == 30 and noisy["reached_target"] == 0.0
    assert 0.9 < noisy["coverage"] <= 1.0 and 0.9 < six["coverage"] <= 1.0
