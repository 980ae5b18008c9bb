"""Statistics on constructed data with a known true ratio (these numbers are the tests' own)."""

import numpy as np
import pandas as pd
import pytest

from mnnrepro.analysis.stats import compare_phase, paired_ratio, reps_for_half_width


def simulate(rng, n, true_ratio, cv=0.05, drift=0.1):
    """Paired blocks: a shared per-block drift plus independent noise per variant."""
    block = 100.0 * np.exp(rng.normal(0, drift, n))
    base = block * np.exp(rng.normal(0, cv, n))
    treat = true_ratio * block * np.exp(rng.normal(0, cv, n))
    return base, treat


def test_ci_covers_true_ratio_in_at_least_93_of_100_simulations():
    true_ratio, covered = 1.81, 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        base, treat = simulate(rng, 20, true_ratio)
        ci = paired_ratio(base, treat, 0.95)
        covered += ci["ci_low"] <= true_ratio <= ci["ci_high"]
    assert covered >= 93


def test_same_seed_same_ci_and_fewer_reps_wider_ci():
    rng = np.random.default_rng(7)
    base, treat = simulate(rng, 40, 1.13)
    a = paired_ratio(base, treat, 0.95, "bootstrap", np.random.default_rng(3), 2000)
    b = paired_ratio(base, treat, 0.95, "bootstrap", np.random.default_rng(3), 2000)
    assert a == b
    few = paired_ratio(base[:5], treat[:5], 0.95)
    assert few["ci_high"] - few["ci_low"] > a["ci_high"] - a["ci_low"]


def test_pairing_removes_shared_drift():
    """Strong drift common to both variants must not widen the paired CI."""
    rng = np.random.default_rng(11)
    base, treat = simulate(rng, 10, 1.5, cv=0.01, drift=0.5)
    ci = paired_ratio(base, treat, 0.95)
    assert ci["ci_high"] - ci["ci_low"] < 0.05


def test_compare_phase_reports_companions():
    rng = np.random.default_rng(5)
    base, treat = simulate(rng, 12, 1.3)
    rows = [{"block": i, "variant": "off", "tps": b} for i, b in enumerate(base)]
    rows += [{"block": i, "variant": "on", "tps": t} for i, t in enumerate(treat)]
    result = compare_phase(
        pd.DataFrame(rows), "off", "on", {"ci_level": 0.95, "target_half_width": 0.02}
    )
    assert result["n_pairs"] == 12
    assert result["ci_low"] < result["ratio"] < result["ci_high"]
    assert result["median_treatment_tps"] > result["median_baseline_tps"]
    assert result["p_wilcoxon"] < 0.05
    assert result["reps_for_target"] >= 2


def test_reps_for_half_width_scales_with_square():
    # half-width 25 % at n=10 -> 12.5 % needs 4x the repetitions
    assert reps_for_half_width(10, 1.0, 0.75, 1.25, 0.125) == 40
    assert reps_for_half_width(10, 1.0, 0.96, 1.04, 0.02) == 40


@pytest.mark.parametrize("bad", [([1.0], [1.0]), ([1.0, 2.0], [1.0]), ([1.0, 0.0], [1.0, 1.0])])
def test_paired_ratio_rejects_bad_samples(bad):
    with pytest.raises(ValueError):
        paired_ratio(np.array(bad[0]), np.array(bad[1]), 0.95)
