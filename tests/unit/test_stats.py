"""Statistics on constructed data with a known true ratio (these numbers are the tests' own)."""

import numpy as np
import pandas as pd
import pytest

from mnnrepro.stats import Interval, compare_phase, paired_ratio, reps_for_half_width

T_95 = Interval("t", 0.95, None, 0, 0)  # Student t at 95 %, the degrees of freedom n - 1
BOOTSTRAP = Interval("bootstrap", 0.95, None, 2000, 3)


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
        ci = paired_ratio(base, treat, T_95)
        covered += ci["ci_low"] <= true_ratio <= ci["ci_high"]
    assert covered >= 93


def test_same_seed_same_ci_and_fewer_reps_wider_ci():
    rng = np.random.default_rng(7)
    base, treat = simulate(rng, 40, 1.13)
    a = paired_ratio(base, treat, BOOTSTRAP, np.random.default_rng(3))
    b = paired_ratio(base, treat, BOOTSTRAP, np.random.default_rng(3))
    assert a == b
    few = paired_ratio(base[:5], treat[:5], T_95)
    assert few["ci_high"] - few["ci_low"] > a["ci_high"] - a["ci_low"]


def test_pairing_removes_shared_drift():
    """Strong drift common to both variants must not widen the paired CI."""
    rng = np.random.default_rng(11)
    base, treat = simulate(rng, 10, 1.5, cv=0.01, drift=0.5)
    ci = paired_ratio(base, treat, T_95)
    assert ci["ci_high"] - ci["ci_low"] < 0.05


def test_compare_phase_reports_companions():
    rng = np.random.default_rng(5)
    base, treat = simulate(rng, 12, 1.3)
    rows = [{"block": i, "variant": "off", "tps": b} for i, b in enumerate(base)]
    rows += [{"block": i, "variant": "on", "tps": t} for i, t in enumerate(treat)]
    result = compare_phase(pd.DataFrame(rows), "off", "on", T_95, 0.02)
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
        paired_ratio(np.array(bad[0]), np.array(bad[1]), T_95)


def test_extreme_but_legal_results_are_reported_and_plotted_bounded(tmp_path):
    """Two blocks whose ratios differ 1000-fold (a machine busy in one of them): the t interval
    with one degree of freedom spans many orders of magnitude. The estimate of repetitions
    needed stays a bounded number, the report says "more than", and the speedup chart renders
    (vl-convert refused a 32-digit integer before)."""
    from mnnrepro.analysis.plots import save, speedup_chart
    from mnnrepro.analysis.summary import stop_reason
    from mnnrepro.analysis.text import reps_text
    from mnnrepro.stats import REPS_CAP

    rows = [{"block": 0, "variant": "off", "tps": 10.0}, {"block": 0, "variant": "on", "tps": 10.0}]
    rows += [{"block": 1, "variant": "off", "tps": 10.0}, {"block": 1, "variant": "on", "tps": 1e4}]
    result = compare_phase(pd.DataFrame(rows), "off", "on", T_95, 0.02)
    assert result["ci_high"] / result["ci_low"] > 1e12  # the interval is as wide as in the field
    assert result["reps_for_target"] == REPS_CAP + 1
    assert reps_text(result["reps_for_target"]) == f"more than {REPS_CAP}"
    assert f"more than {REPS_CAP} needed" in stop_reason({}, result, 0.02)
    summary = pd.DataFrame(
        [
            {
                "device": "host",
                "model": "m",
                "phase": phase,
                "verdict": "inconclusive",
                "gain": result["ratio"] - 1,
                "gain_ci_low": result["ci_low"] - 1,
                "gain_ci_high": result["ci_high"] - 1,
                "claim_gain": 0.81,
                "tolerance": 0.1,
                "reps_for_target": result["reps_for_target"],
            }
            for phase in ("prefill", "decode")
        ]
    )
    chart = speedup_chart(summary)
    save(chart, str(tmp_path / "s.html"), str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "CIs cut at the frame" in (tmp_path / "s.html").read_text()


def test_a_vision_phase_is_compared_only_where_both_engines_measured_it():
    """A pair of a prebuilt engine (it takes images) and an engine that does not (llm_bench):
    prefill and decode are compared, the vision phases are not (one side has no rows)."""
    from mnnrepro.analysis.summary import measured_phases

    text = [("a", p) for p in ("prefill", "decode")] + [("b", p) for p in ("prefill", "decode")]
    vision = [(v, p) for v in ("a", "b") for p in ("vision", "image_prefill", "first_token")]
    both = pd.DataFrame(text + vision, columns=["variant", "phase"])
    assert measured_phases(both, ("a", "b")) == [
        "prefill",
        "decode",
        "vision",
        "image_prefill",
        "first_token",
    ]
    one_side = both[~((both["variant"] == "b") & both["phase"].isin(["vision", "first_token"]))]
    assert measured_phases(one_side, ("a", "b")) == ["prefill", "decode", "image_prefill"]
