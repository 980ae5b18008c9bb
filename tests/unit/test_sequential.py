"""The intervals a run that stops on its verdict is judged on: the per-look level calibrated
for the run's looks (sequential.sequential_t_level) against its closed forms and an independent
simulation, the anytime sequence's one-sample form, the run's serial-dependence check and the
widening it asks for, the bias-adjusted gain at a stop, and the familywise level. The whole
rule under the phone's noise scenarios: benchmarks/results/sequential_stopping.md."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import design_stats

from mnnrepro import assumptions, sequential, stats
from mnnrepro.intervals import interval_name, run_intervals


def test_one_look_is_the_plain_t_interval_at_the_level_asked():
    assert sequential.sequential_t_level([12], 0.95) == 0.95
    assert sequential.sequential_t_level([12, 12], 0.9) == 0.9


def test_two_far_looks_give_pococks_closed_form_constant():
    """At many blocks the t statistics are Gaussian with correlation sqrt(n1/n2): for looks at
    n and 2n Pocock's constant c solves P(|Z1| < c, |Z2| < c) = 0.95 (c = 2.178), which the
    calibrated per-look level must reproduce (less the calibration's own Monte Carlo margin,
    which only widens it). Bonferroni's 2.241 would fail this, as would the plain 1.960."""
    from scipy.stats import multivariate_normal, norm

    rho = math.sqrt(0.5)
    law = multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]])

    def inside(c):
        return law.cdf([c, c]) - law.cdf([-c, c]) - law.cdf([c, -c]) + law.cdf([-c, -c])

    low, high = 2.0, 2.5
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if inside(middle) < 0.95 else (low, middle)
    assert low == pytest.approx(2.178, abs=0.002)
    level = sequential.sequential_t_level([2000, 4000], 0.95)
    calibrated = norm.ppf(0.5 + level / 2)  # df 2000: the t quantile is the normal's
    assert low <= calibrated <= low + 0.015


def test_an_independent_simulation_of_every_look_keeps_the_level_and_no_more():
    """Brute force, with its own seed and every block drawn: over looks 6 to 28 the share of
    runs whose interval ever misses the mean is at most 5 % (within Monte Carlo error) and
    not far below it; at the same looks the plain t interval misses far more often and
    Bonferroni's level far less (both fail one of the two bounds)."""
    looks = list(range(6, 29))
    runs = 20000
    data = np.random.default_rng(99).standard_normal((runs, 28)) * 0.04 + 0.3

    def miss_rate(level):
        missed = np.zeros(runs, bool)
        for n in looks:
            low, high = stats.t_interval(data[:, :n], level)
            missed |= (np.log(low) > 0.3) | (np.log(high) < 0.3)
        return missed.mean()

    calibrated = miss_rate(sequential.sequential_t_level(looks, 0.95))
    assert 0.04 <= calibrated <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)
    assert miss_rate(0.95) > 0.15
    assert miss_rate(1 - 0.05 / len(looks)) < 0.03


def test_the_calibrated_boundary_is_narrower_than_the_anytime_one_and_bonferronis():
    looks = range(6, 29)
    level = sequential.sequential_t_level(looks, 0.95)
    calibrated = [stats.t_quantile(0.5 + level / 2, n - 1) for n in (6, 10, 28)]
    assert calibrated == pytest.approx([4.18, 3.34, 2.83], abs=0.03)
    bonferroni = [stats.t_quantile(1 - 0.025 / 23, n - 1) for n in (6, 10, 28)]
    x = np.random.default_rng(1).standard_normal(28)
    anytime = []
    for n in (6, 10, 28):
        low, high = stats.anytime_interval(x[:n], 0.95)
        anytime.append(math.log(high / low) / 2 / (x[:n].std(ddof=1) / math.sqrt(n)))
    assert all(c < a and c < b for c, a, b in zip(calibrated, anytime, bonferroni, strict=True))


def test_the_anytime_interval_is_the_one_sample_mixtures_with_nu_n_minus_1():
    """At the interval's endpoints the one-sample normal-mixture Bayes factor,
    sqrt(r) ((1 + t^2/nu) / (1 + r t^2/nu))^(n/2) with nu = n - 1 and r = phi / (phi + n),
    equals 1/alpha: the interval is exactly where the mixture has not yet rejected."""
    x = np.random.default_rng(4).normal(0.2, 0.05, 12)
    n, alpha = x.size, 0.05
    low, high = stats.anytime_interval(x, 1 - alpha)
    se = x.std(ddof=1) / math.sqrt(n)
    r, nu = 1 / (1 + n), n - 1
    for edge in (math.log(low), math.log(high)):
        t = (x.mean() - edge) / se
        factor = math.sqrt(r) * ((1 + t * t / nu) / (1 + r * t * t / nu)) ** (n / 2)
        assert factor == pytest.approx(1 / alpha, rel=1e-9)


def ar1(rng, n: int, rho: float) -> np.ndarray:
    e = rng.standard_normal(n)
    for i in range(1, n):
        e[i] = rho * e[i - 1] + math.sqrt(1 - rho**2) * e[i]
    return e


def test_the_dependence_check_keeps_its_level_and_finds_a_wander():
    """Independent blocks (five correlated rows, as pairs sharing a variant are) are called
    dependent in at most about 5 % of runs; rows whose builds wander (AR(1), rho 0.7 per
    block) are found in most runs at 15 blocks."""
    rng = np.random.default_rng(8)

    def rows(noise):
        a, b, c = (noise() for _ in range(3))  # three variants, two pairs and their gaps
        return [b - a, c - a, (b - a) - (c - a) * 0.5, b - c, a - c]

    quiet = [assumptions.dependence_p(rows(lambda: rng.standard_normal(15))) for _ in range(600)]
    assert np.mean(np.array(quiet) < assumptions.DEPENDENCE_P) <= 0.05 + 0.027
    wander = [assumptions.dependence_p(rows(lambda: ar1(rng, 15, 0.7))) for _ in range(300)]
    assert np.mean(np.array(wander) < assumptions.DEPENDENCE_P) >= 0.6


def test_a_found_dependence_widens_the_interval_by_the_rows_ar1_factor():
    rng = np.random.default_rng(3)
    wander = 0.2 + 0.04 * ar1(rng, 16, 0.8)
    factor = assumptions.dependence_inflation(wander)
    assert factor > 1.5
    plain = stats.log_ratio_interval(wander, 0.95)
    widened = stats.log_ratio_interval(wander, 0.95, widen=True)
    centre = wander.mean()
    assert math.log(widened[1]) - centre == pytest.approx(
        factor * (math.log(plain[1]) - centre), rel=1e-9
    )
    assert assumptions.dependence_inflation(np.full(3, np.nan)) == 1.0


def test_the_other_checks_see_what_they_are_for():
    rng = np.random.default_rng(5)
    trend = np.linspace(0, 1, 20) + 0.05 * rng.standard_normal(20)
    noise = rng.standard_normal(20)
    assert assumptions.runs_p(trend) < 0.01 < assumptions.runs_p(noise)
    assert assumptions.lag1_p(trend) < 0.01 < assumptions.lag1_p(noise)
    tails = rng.standard_t(2, 400)
    assert assumptions.excess_kurtosis(tails) > 2 > abs(assumptions.excess_kurtosis(noise[:400]))
    first, second = rng.normal(0.3, 0.02, 8), rng.normal(0.2, 0.02, 8)
    assert assumptions.two_group_p(first, second) < 0.001
    assert assumptions.two_group_p(first, rng.normal(0.3, 0.02, 8)) > 0.01


@pytest.mark.slow
def test_the_bias_adjusted_gain_removes_the_bias_of_stopping_on_a_threshold():
    """One row stopped as soon as its interval clears a threshold above the truth (a claim
    band's edge): the runs that stop early are those whose mean fell low, so the mean at the
    stop is biased down (about 4 of its standard errors over 300 runs); the bias-adjusted
    estimate's mean error is under a third of it. (A rule that ignores the stop, returning
    the plain mean, fails the second assertion.)"""
    looks = list(range(6, 29))
    level = sequential.sequential_t_level(looks, 0.95)
    truth, sd, threshold = 0.0, 0.05, 0.04
    rng = np.random.default_rng(12)
    plain, adjusted = [], []
    for _ in range(300):
        x = rng.normal(truth, sd, 28)
        for n in looks:
            low, high = stats.t_interval(x[:n], level)
            if not np.log(low) < threshold < np.log(high) or n == looks[-1]:
                break
        mean = float(x[:n].mean())
        plain.append(mean - truth)
        row = sequential.StoppedRow(tuple(looks), level, (threshold,))
        adjusted.append(sequential.bias_adjusted_mean(mean, float(x[:n].std(ddof=1)), row) - truth)
    assert np.mean(plain) < -3 * np.std(plain) / math.sqrt(len(plain))
    assert abs(np.mean(adjusted)) < abs(np.mean(plain)) / 3


def test_the_familywise_level_is_shared_over_the_rows_and_named():
    per_row = run_intervals(design_stats(ci_level=0.95), 10)
    family = run_intervals(design_stats(ci_level=0.95), 10, family=4)
    assert per_row.interval.level == 0.95 and family.interval.level == pytest.approx(0.9875)
    assert interval_name(family) == (
        "t on log ratios; 98.75% per row: all 4 rows at once 95% (Bonferroni)"
    )
    rule = {"min": 6, "max": 28, "until": "verdict"}
    stopped = run_intervals(design_stats(ci_level=0.95), rule, family=4)
    assert stopped.interval.level == sequential.sequential_t_level(range(6, 29), 0.9875)
    assert interval_name(stopped) == (
        f"t on log ratios at {stopped.interval.level:.2%} per look, calibrated for a stop at any "
        "of blocks 6-28: 98.75% per row at the stop; all 4 rows at once 95% (Bonferroni)"
    )


def plain_bisection_level(looks: tuple[int, ...], ci_level: float) -> float:
    """The calibration's bisection as first written (every path compared at every step), on
    the same seeded paths (sequential.simulated_t): its reference."""
    from scipy.special import stdtrit

    abs_t, df = sequential.simulated_t(looks)
    target = sequential.mc_target(1.0 - ci_level, abs_t.shape[1])
    low, high = target / len(looks) / 2, target
    for _ in range(40):
        middle = math.sqrt(low * high)
        crossing = float((abs_t > stdtrit(df, 1 - middle / 2)).any(axis=0).mean())
        low, high = (middle, high) if crossing <= target else (low, middle)
    return float(1.0 - low)


@pytest.mark.parametrize(
    ("looks", "ci_level"), [(tuple(range(6, 29)), 0.95), ((3, 4, 5, 6, 7), 0.975), ((6, 20), 0.9)]
)
def test_the_calibration_compares_only_undecided_paths_and_finds_the_same_level(looks, ci_level):
    """_calibrated_level sets aside the paths whose crossing the bisection's bounds already
    decide; the level is the plain bisection's, bit for bit."""
    calibrated = sequential._calibrated_level.__wrapped__(looks, ci_level)
    assert calibrated == plain_bisection_level(looks, ci_level)
