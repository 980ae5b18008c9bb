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

import functools
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


def sequential_t_level(looks, ci_level: float) -> float:
    """The per-look level of a Student t interval that keeps ci_level over a run judged at
    these looks (numbers of blocks) and stopped at any of them, by any rule: a t multiplier
    calibrated per look (one nominal level at every look, Pocock's boundary on the p-value
    scale), exact for i.i.d. Gaussian per-block log ratios because the t statistics' joint law
    at the looks is free of the mean and the variance. One look: ci_level itself.

    Calibrated by a seeded simulation of that law (the running mean and sum of squares at
    the looks, drawn from their exact increments: a normal sum and a chi-square per stretch
    between looks): the per-look level is bisected until the share of simulated runs whose
    interval misses at some look is 1 - ci_level less two of its binomial standard errors, so
    that Monte Carlo error makes the boundary wider, never narrower. At
    95 % over blocks 6 to 28 the multiplier is 4.18 / 3.34 / 2.83 at 6 / 10 / 28 blocks, where
    the anytime interval's is 5.45 / 3.87 / 3.36 and Bonferroni's over the 23 looks 5.78 /
    4.24 / 3.39 (tests/unit/test_sequential.py)."""
    looks = tuple(sorted({int(n) for n in looks}))
    if len(looks) == 1:
        return ci_level
    return _calibrated_level(looks, ci_level)


SEQUENTIAL_SEED = 20261205  # the calibration's own: the same boundary in every job
SEQUENTIAL_DRAWS = 6_000_000  # paths x looks simulated (2**18 paths up to 22 looks)


@functools.lru_cache(maxsize=32)
def _calibrated_level(looks: tuple[int, ...], ci_level: float) -> float:
    from scipy.special import stdtrit

    if looks[0] < 3:
        raise ValueError(f"the first look needs at least 3 blocks, got {looks[0]}")
    alpha = 1.0 - ci_level
    paths = int(min(2**18, SEQUENTIAL_DRAWS // len(looks)))
    rng = np.random.default_rng(SEQUENTIAL_SEED)
    mean, squares, n = np.zeros(paths), np.zeros(paths), 0
    abs_t = np.empty((len(looks), paths))
    for i, look in enumerate(looks):
        m = look - n
        stretch_mean = rng.standard_normal(paths) / math.sqrt(m)
        stretch_squares = 2.0 * rng.standard_gamma((m - 1) / 2, paths) if m > 1 else 0.0
        delta = stretch_mean - mean
        mean += delta * m / look
        squares += stretch_squares + delta**2 * n * m / look
        n = look
        abs_t[i] = np.abs(mean) * math.sqrt(n) / np.sqrt(squares / (n - 1))
    df = np.asarray(looks, dtype=float)[:, None] - 1
    target = alpha - 2.0 * math.sqrt(alpha * (1 - alpha) / paths)  # Monte Carlo error: wider

    def crossing(level_alpha: float) -> float:  # the share of paths that cross at some look
        return float((abs_t > stdtrit(df, 1 - level_alpha / 2)).any(axis=0).mean())

    low, high = target / len(looks) / 2, target  # Bonferroni's level crosses at most target
    for _ in range(40):  # bisection on the log of the per-look alpha
        middle = math.sqrt(low * high)
        low, high = (middle, high) if crossing(middle) <= target else (low, middle)
    return float(1.0 - low)


@dataclass(frozen=True)
class StoppedRow:
    """How one row of a run that stops on its verdict could stop: at the first of `looks`
    from `not_before` on (the look by which the run's other rows had settled) whose t interval
    at `look_level` holds none of `thresholds` (log scale), else at the last look."""

    looks: tuple[int, ...]
    look_level: float
    thresholds: tuple[float, ...]
    not_before: int = 0


def stopped_mean_bias(
    mean: float, sd: float, row: StoppedRow, paths: int = 4000, seed: int = 0
) -> float:
    """The bias of the plain mean of i.i.d. N(mean, sd^2) per-block log ratios at the row's
    stop: E[mean at the stop] - mean, simulated with common random numbers (the same seed
    gives a smooth function of `mean`)."""
    looks = sorted(row.looks)
    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((paths, looks[-1])) * sd + mean
    cumulative, squares = np.cumsum(draws, axis=1), np.cumsum(draws**2, axis=1)
    edges = np.asarray(sorted(row.thresholds), dtype=float)[None, :]
    done, at_stop = np.zeros(paths, dtype=bool), np.empty(paths)
    for n in looks:
        m = cumulative[:, n - 1] / n
        s = np.sqrt(np.maximum(squares[:, n - 1] / n - m**2, 0.0) * n / (n - 1))
        half = (t_quantile(0.5 + row.look_level / 2, n - 1) * s / math.sqrt(n))[:, None]
        inside = ((edges > m[:, None] - half) & (edges < m[:, None] + half)).any(axis=1)
        stop = ~done & ((~inside & (n >= row.not_before)) | (n == looks[-1]))
        at_stop[stop] = m[stop]
        done |= stop
    return float(at_stop.mean() - mean)


def bias_adjusted_mean(observed: float, sd: float, row: StoppedRow, seed: int = 0) -> float:
    """Whitehead's bias-adjusted estimate: the mean m whose simulated stopped mean equals the
    observed one (m + bias(m) = observed), by fixed-point iteration from the observed mean.
    The observed mean where the row could stop at one look only."""
    if len(set(row.looks)) == 1 or not math.isfinite(sd) or sd <= 0:
        return observed
    estimate = observed
    for _ in range(8):
        estimate = observed - stopped_mean_bias(estimate, sd, row, seed=seed)
    return float(estimate)


def t_quantile(q: float, df):
    """Student t's q quantile at df degrees of freedom: scipy.stats.t.ppf's own function
    (scipy.special.stdtrit, the same floats), without importing scipy.stats (about half a
    CPU-second of docstring processing in every job that derives an interval)."""
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
            result["n_pairs"], result["ratio"], result["ci_low"], result["ci_high"],
            target_half_width,
        ),
    }  # fmt: skip
