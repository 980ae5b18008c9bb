"""The sequential design's calibration: the per-look level of a t interval judged at several looks
(Pocock's boundary, by seeded simulation), and the bias of a mean at a verdict-driven stop with
Whitehead's adjusted estimate (tests/unit/test_sequential.py)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from mnnrepro.stats import t_quantile


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


def simulated_t(looks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(|t| at each look for each seeded path, shape looks x paths; each look's degrees of
    freedom, as a column): the running mean and sum of squares drawn from their exact
    increments, a normal sum and a chi-square per stretch between looks."""
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
    return abs_t, np.asarray(looks, dtype=float)[:, None] - 1


def mc_target(alpha: float, paths: int) -> float:
    """The share of paths that may cross: alpha less two of its binomial standard errors
    (Monte Carlo error makes the boundary wider, never narrower)."""
    return alpha - 2.0 * math.sqrt(alpha * (1 - alpha) / paths)


@functools.lru_cache(maxsize=32)
def _calibrated_level(looks: tuple[int, ...], ci_level: float) -> float:
    # scipy: a calibration only, cached
    from scipy.special import stdtrit

    if looks[0] < 3:
        raise ValueError(f"the first look needs at least 3 blocks, got {looks[0]}")
    abs_t, df = simulated_t(looks)
    paths = abs_t.shape[1]
    target = mc_target(1.0 - ci_level, paths)

    def crosses(t: np.ndarray, level_alpha: float) -> np.ndarray:  # per path: at some look
        return (t > stdtrit(df, 1 - level_alpha / 2)).any(axis=0)

    low, high = target / len(looks) / 2, target  # Bonferroni's level crosses at most target
    # a path crossing at `low` crosses at every level the bisection tries, one not crossing at
    # `high` at none (the boundary falls as the level rises): only the undecided paths are
    # compared at each step, the same comparisons as over all paths (the same level, bit for
    # bit, 2-3x faster)
    always = crosses(abs_t, low)
    undecided = abs_t[:, ~always & crosses(abs_t, high)]
    crossed = int(always.sum())
    for _ in range(40):  # bisection on the log of the per-look alpha
        middle = math.sqrt(low * high)
        here = crosses(undecided, middle)
        if (crossed + int(here.sum())) / paths <= target:
            low, crossed, undecided = middle, crossed + int(here.sum()), undecided[:, ~here]
        else:
            high, undecided = middle, undecided[:, here]
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
