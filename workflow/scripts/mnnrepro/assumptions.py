"""What an interval of per-block log ratios assumes, checked on the blocks themselves: that
they are independent (no serial dependence over block order: the lag-1 autocorrelation and
the runs test), that their tails are not heavy (excess kurtosis), and that the order inside
a block does not matter (a two-group comparison). Numbers in, numbers out; where dependence
is found, stats widens the interval by dependence_inflation and the summary says so."""

from __future__ import annotations

import math

import numpy as np


def lag1_autocorrelation(values) -> float:
    """The lag-1 autocorrelation of a series (in block order); nan below 3 values or without
    variance."""
    x = np.asarray(values, dtype=float)
    if x.size < 3:
        return math.nan
    d = x - x.mean()
    denominator = float(d @ d)
    return float(d[1:] @ d[:-1] / denominator) if denominator > 0 else math.nan


def lag1_p(values) -> float:
    """One-sided p-value of positive lag-1 autocorrelation (the kind that narrows an interval
    falsely): its null mean -1/n and variance (n-2)^2/(n^2 (n-1)) (Moran 1948), normal."""
    x = np.asarray(values, dtype=float)
    r, n = lag1_autocorrelation(x), x.size
    if math.isnan(r):
        return math.nan
    z = (r + 1 / n) / math.sqrt((n - 2) ** 2 / (n**2 * (n - 1)))
    return float(0.5 * math.erfc(z / math.sqrt(2)))


def runs_p(values) -> float:
    """One-sided p-value of the Wald-Wolfowitz runs test above and below the median (values at
    the median left out), normal approximation: too few runs is a trend or a slow wander (the
    dependence that narrows an interval falsely). nan where one side is empty."""
    x = np.asarray(values, dtype=float)
    signs = x[x != np.median(x)] > np.median(x)
    above, below = int(signs.sum()), int((~signs).sum())
    if above == 0 or below == 0:
        return math.nan
    runs = 1 + int(np.count_nonzero(signs[1:] != signs[:-1]))
    n = above + below
    mean = 2 * above * below / n + 1
    var = 2 * above * below * (2 * above * below - n) / (n**2 * (n - 1))
    if var <= 0:
        return math.nan
    return float(0.5 * math.erfc((mean - runs) / math.sqrt(2 * var)))


def excess_kurtosis(values) -> float:
    """Sample excess kurtosis (0 for a Gaussian; a heavy tail is large and positive)."""
    x = np.asarray(values, dtype=float)
    if x.size < 4 or x.std() == 0:
        return math.nan
    d = x - x.mean()
    return float((d**4).mean() / (d**2).mean() ** 2 - 3.0)


def two_group_p(first, second) -> float:
    """Two-sided Welch t p-value of a difference in means between two groups (the order
    effect: blocks where the treatment ran first vs second); nan with fewer than 2 each."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.size < 2 or b.size < 2:
        return math.nan
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return math.nan
    # scipy: where a p-value is computed only
    from scipy.special import stdtr

    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return float(2.0 * stdtr(df, -abs(t)))


def dependence_inflation(values) -> float:
    """The factor by which positive serial dependence widens the standard error of a mean:
    sqrt((1 + rho) / (1 - rho)) of an AR(1), with rho the lag-1 autocorrelation corrected for
    its small-sample bias (Kendall: E r = rho - (1 + 3 rho) / n) plus two of its standard
    errors (sqrt((1 - rho^2) / n)), clipped to [0, 0.9]: at 10-20 blocks the estimate alone
    is too uncertain to keep the level (benchmarks/results/sequential_stopping.md); 1 below 3
    values."""
    x = np.asarray(values, dtype=float)
    r = lag1_autocorrelation(x)
    if math.isnan(r):
        return 1.0
    corrected = min(0.9, max(0.0, r + (1 + 3 * r) / x.size))
    rho = min(0.9, corrected + 2 * math.sqrt((1 - corrected**2) / x.size))
    return math.sqrt((1 + rho) / (1 - rho))


DEPENDENCE_P = 0.05  # the dependence check's level
DEPENDENCE_PERMUTATIONS = 199
DEPENDENCE_SEED = 20261205  # the check's own: the same answer in the run and in the summary


def dependence_p(series) -> float:
    """The p-value of positive serial dependence in a run's judged rows, all at once: the
    largest lag-1 autocorrelation over the rows (their per-block log ratios, in block order,
    cut to the blocks all of them have), against the same statistic with the blocks' order
    permuted (one permutation for every row, so the rows' correlation through shared
    variants is kept: exact for exchangeable blocks). One test for the run, however many rows:
    a wander in one pair is found, and its false alarms stay at the level. nan below 5 blocks."""
    rows = [np.asarray(x, dtype=float) for x in series]
    n = min((x.size for x in rows), default=0)
    if n < 5:
        return math.nan
    data = np.stack([x[:n] for x in rows])  # rows x blocks
    data = data - data.mean(axis=1, keepdims=True)
    rng = np.random.default_rng(DEPENDENCE_SEED)
    orders = np.vstack([np.arange(n), np.argsort(rng.random((DEPENDENCE_PERMUTATIONS, n)), axis=1)])
    permuted = data[:, orders]  # rows x orders x blocks
    squares = (data**2).sum(axis=1)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (permuted[:, :, 1:] * permuted[:, :, :-1]).sum(axis=2) / squares
    largest = np.nanmax(np.where(np.isfinite(r), r, -np.inf), axis=0)
    return float((largest >= largest[0] - 1e-12).mean())


def dependence_found(series) -> bool:
    """dependence_p below DEPENDENCE_P: the rows' blocks wander or trend together, which a t
    interval that assumes independent blocks would make too narrow."""
    p = dependence_p(series)
    return bool(p < DEPENDENCE_P)
