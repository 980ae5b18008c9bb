"""Speedup of treatment over baseline with a calibrated CI over paired blocks, and companions.

Pairs are the interleaved blocks: block i holds one invocation of each variant, run
back to back, so slow drift of the machine (heat, background load) hits both alike.
The speedup is the geometric mean of the per-block ratios treatment/baseline.

Its CI is, by default, the Student t interval on the mean of the per-block log ratios,
exponentiated (`stats.interval: t`). Chosen by measurement, not assumed: at 6, 10 and 20
blocks, with log-normal, heavy-tailed (t3) and drifting noise, it keeps >= 94 % coverage at a
nominal 95 %, where the paired percentile bootstrap over the same blocks gives 86-93 %
(benchmarks/ci_coverage.py, results in benchmarks/results/ci_coverage.md; the simulation is
mnnrepro.analysis.calibration, also run by tests/unit/test_calibration.py). The bootstrap stays
available as `stats.interval: bootstrap`. The companion test is the paired Wilcoxon signed-rank
test on the log ratios (exact at small n)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mnnrepro.assumptions import (
    dependence_inflation,
    excess_kurtosis,
    lag1_autocorrelation,
    lag1_p,
    runs_p,
)

if TYPE_CHECKING:  # the tables are the callers'; scipy is imported where a CI or p-value is
    import pandas as pd  # computed (many jobs that read this module's names compute neither)

INTERVALS = ("t", "bootstrap", "anytime")


@dataclass(frozen=True)
class Interval:
    """How a speedup's interval is computed, as numbers (intervals.run_intervals chooses it):
    its kind (one of INTERVALS), its level, the t quantile's degrees of freedom (None: n - 1),
    the bootstrap's resamples and seed, and whether it is widened for serial dependence found
    in the run (log_ratio_interval)."""

    kind: str
    level: float
    df: int | None
    n_boot: int
    seed: int
    widen: bool = False

    def of(self, log_ratio: np.ndarray, rng: np.random.Generator | None = None):
        """(low, high) of the mean of these per-block log ratios, as ratios."""
        rng = rng or np.random.default_rng(self.seed)
        return log_ratio_interval(
            log_ratio, self.level, self.kind, rng, self.n_boot, self.df, self.widen
        )


# the mixture's prior scale (Lindon et al.'s phi): where, in blocks, the interval is tightest
ANYTIME_PHI = 1.0


def anytime_interval(
    log_ratios: np.ndarray, ci_level: float, phi: float = ANYTIME_PHI
) -> tuple[np.ndarray, np.ndarray]:
    """A confidence sequence for the mean log ratio, per row of log_ratios (..., n): (low,
    high) as ratios, which hold the mean with probability ci_level at every n at once, so a
    run may stop on what the interval shows (the verdict) and keep its coverage.

    The anytime-valid t interval of a Gaussian mean with unknown variance (the intercept-only
    linear model of Lindon, Ham, Tingley & Bojinov, "Anytime-Valid Linear Models and
    Regression Adjusted Causal Inference in Randomized Experiments", 2022, arXiv:2210.08589;
    the closed form of the `savvi` package's LinearRegression): a normal mixture over the
    mean, scale phi, against the t statistic. One-sample form: integrating the mean over the
    mixture and the variance over its right-Haar prior gives the Bayes factor
    sqrt(r) ((1 + t^2/nu) / (1 + r t^2/nu))^(n/2) with nu = n - 1 and r = phi / (phi + n);
    the interval is where it stays below 1/alpha (the regression form's nu = n - 2 spends a
    degree of freedom on nothing here and is 32 % wider at 6 blocks). Infinite while n is too
    small for the mixture to bound it (n < 5 at 95 % with phi 1). The interval for runs with
    a known maximum is the narrower sequential_t_level's."""
    log_ratios = np.asarray(log_ratios, dtype=float)
    n = log_ratios.shape[-1]
    mean = log_ratios.mean(axis=-1)
    if n < 3:
        return np.exp(mean * np.nan), np.exp(mean * np.nan)
    se = log_ratios.std(axis=-1, ddof=1) / math.sqrt(n)
    alpha, nu, r = 1.0 - ci_level, n - 1, phi / (phi + n)
    a = (r * alpha**2) ** (1.0 / (nu + 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        half = se * math.sqrt(nu * (1 - a) / (a - r)) if a > r else se * np.inf
    return np.exp(mean - half), np.exp(mean + half)


def t_interval(
    log_ratios: np.ndarray, ci_level: float, df: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Student t CI of the mean log ratio, per row of log_ratios (..., n): (low, high) as
    ratios. Vectorised: the calibration simulations call it on thousands of rows at once.

    df: degrees of freedom of the t quantile, n - 1 unless given. After precision on demand
    stopped a run (bench.repetitions {min, ...}), it is min - 1: the quantile of the first
    look, which keeps the coverage that stopping on a small variance estimate would cost."""
    log_ratios = np.asarray(log_ratios, dtype=float)
    n = log_ratios.shape[-1]
    mean = log_ratios.mean(axis=-1)
    quantile = t_quantile(0.5 + ci_level / 2, (n - 1) if df is None else df)
    half = quantile * log_ratios.std(axis=-1, ddof=1) / math.sqrt(n)
    return np.exp(mean - half), np.exp(mean + half)


def t_quantile(q: float, df):
    """Student t's q quantile at df degrees of freedom: scipy.stats.t.ppf's own function
    (scipy.special.stdtrit, the same floats), without importing scipy.stats (about half a
    CPU-second of docstring processing in every job that derives an interval)."""
    # scipy: where a quantile is computed only
    from scipy.special import stdtrit

    return stdtrit(df, q)


def bootstrap_interval(
    log_ratios: np.ndarray, ci_level: float, rng: np.random.Generator, n_boot: int
) -> tuple[float, float]:
    """Percentile interval of the geometric-mean ratio over blocks resampled with replacement."""
    n = log_ratios.size
    draws = rng.integers(0, n, size=(n_boot, n))
    boot = np.exp(log_ratios[draws].mean(axis=1))
    alpha = 1.0 - ci_level
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def paired_ratio(
    baseline: np.ndarray,
    treatment: np.ndarray,
    interval: Interval,
    rng: np.random.Generator | None = None,
) -> dict:
    """The geometric-mean speedup and its interval, with the checks of what the interval
    assumes."""
    baseline = np.asarray(baseline, dtype=float)
    treatment = np.asarray(treatment, dtype=float)
    if baseline.shape != treatment.shape or baseline.size < 2:
        raise ValueError("need >= 2 paired samples of equal count")
    if (baseline <= 0).any() or (treatment <= 0).any():
        raise ValueError("throughputs must be positive")
    log_ratio = np.log(treatment) - np.log(baseline)
    low, high = interval.of(log_ratio, rng)
    return {
        "ratio": float(np.exp(log_ratio.mean())),
        "ci_low": low,
        "ci_high": high,
        "n_pairs": int(log_ratio.size),
        "p_wilcoxon": wilcoxon_p(log_ratio),
        **assumption_checks(log_ratio, interval.widen and interval.kind != "bootstrap"),
    }


def assumption_checks(log_ratio: np.ndarray, widened: bool) -> dict:
    """What the interval assumes, checked on this row's per-block log ratios in block order:
    its own serial dependence (lag-1 autocorrelation and its p-value, the runs test's), heavy
    tails (excess kurtosis), and the factor its interval was widened by (1: not widened)."""
    return {
        "lag1_autocorrelation": lag1_autocorrelation(log_ratio),
        "lag1_p": lag1_p(log_ratio),
        "runs_p": runs_p(log_ratio),
        "excess_kurtosis": excess_kurtosis(log_ratio),
        "dependence_widening": dependence_inflation(log_ratio) if widened else 1.0,
    }


def log_ratio_interval(
    log_ratio: np.ndarray,
    ci_level: float,
    interval: str = "t",
    rng: np.random.Generator | None = None,
    n_boot: int = 10000,
    df: int | None = None,
    widen: bool = False,
) -> tuple[float, float]:
    """The configured kind of interval (`stats.interval`) of the mean of per-block log ratios,
    as ratios. widen: serial dependence was found in the run (assumptions.dependence_found),
    so a t or anytime interval is widened about its centre by this row's
    assumptions.dependence_inflation."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    if interval == "t":
        low, high = t_interval(log_ratio, ci_level, df)
    elif interval == "anytime":
        low, high = anytime_interval(log_ratio, ci_level)
    else:
        low, high = bootstrap_interval(log_ratio, ci_level, rng or np.random.default_rng(0), n_boot)
    if widen and interval != "bootstrap":
        centre, factor = float(np.mean(log_ratio)), dependence_inflation(log_ratio)
        low = math.exp(centre - factor * (centre - math.log(low)))
        high = math.exp(centre + factor * (math.log(high) - centre))
    return float(low), float(high)


def wilcoxon_p(log_ratio: np.ndarray) -> float:
    """Two-sided paired Wilcoxon signed-rank p-value of the log ratios (exact at small n);
    1.0 when every pair is a tie (nothing to rank)."""
    if not np.any(log_ratio != 0):
        return 1.0
    # scipy.stats: the Wilcoxon test only
    from scipy import stats as sps

    return float(sps.wilcoxon(log_ratio, alternative="two-sided").pvalue)


def cv(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=float)
    return float(values.std(ddof=1) / values.mean()) if values.size > 1 else math.nan


def half_width(result: dict) -> float:
    """Relative half-width of a ratio's CI."""
    return (result["ci_high"] - result["ci_low"]) / 2 / result["ratio"]


# The most repetitions a config may ask for (bench.repetitions' bound in the schema). An estimate
# beyond it is reported as "more than REPS_CAP": with two blocks under heavy load the CI can
# span twelve orders of magnitude and the estimate runs to 30 digits, which no table, JSON
# reader or plot should have to hold.
REPS_CAP = 1000


def reps_for_half_width(n: int, ratio: float, ci_low: float, ci_high: float, target: float) -> int:
    """Repetitions per variant for a relative CI half-width <= target (CI width ~ 1/sqrt(n)),
    at most REPS_CAP + 1 (meaning: more than REPS_CAP)."""
    half = (ci_high - ci_low) / 2 / ratio
    if half <= 0:
        return n
    estimate = n * (half / target) ** 2 - 1e-9  # tolerate float noise
    if not math.isfinite(estimate) or estimate > REPS_CAP:
        return REPS_CAP + 1
    return max(2, math.ceil(estimate))


def paired_blocks(table: pd.DataFrame, baseline: str, treatment: str) -> pd.DataFrame:
    """tok/s of baseline and treatment per block where both were measured."""
    wide = table.pivot_table(index="block", columns="variant", values="tps", aggfunc="first")
    for variant in (baseline, treatment):
        if variant not in wide:
            raise ValueError(f"no measurements of variant {variant!r}")
    return wide[[baseline, treatment]].dropna()


def compare_phase(
    table: pd.DataFrame,
    baseline: str,
    treatment: str,
    interval: Interval,
    target_half_width: float,
    rng: np.random.Generator | None = None,
) -> dict:
    """table: the rows of one device x model x phase; interval: how its interval is computed
    (intervals.ChosenInterval.interval); target_half_width: the relative half-width whose
    blocks it estimates (reps_for_half_width)."""
    paired = paired_blocks(table, baseline, treatment)
    base, treat = paired[baseline].to_numpy(), paired[treatment].to_numpy()
    result = paired_ratio(base, treat, interval, rng)
    return {
        **result,
        "median_baseline_tps": float(np.median(base)),
        "median_treatment_tps": float(np.median(treat)),
        "cv_baseline": cv(base),
        "cv_treatment": cv(treat),
        "half_width_rel": half_width(result),
        "reps_for_target": reps_for_half_width(
            result["n_pairs"],
            result["ratio"],
            result["ci_low"],
            result["ci_high"],
            target_half_width,
        ),
    }
