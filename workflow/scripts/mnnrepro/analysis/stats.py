"""Speedup of treatment over baseline with a paired bootstrap CI, and companions.

Pairs are the interleaved blocks: block i holds one invocation of each variant, run
back to back, so slow drift of the machine (heat, background load) hits both alike.
The speedup is the geometric mean of the per-block ratios treatment/baseline; its CI
is the percentile interval of that statistic over blocks resampled with replacement."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps


def paired_ratio(
    baseline: np.ndarray,
    treatment: np.ndarray,
    rng: np.random.Generator,
    n_boot: int,
    ci_level: float,
) -> dict:
    baseline = np.asarray(baseline, dtype=float)
    treatment = np.asarray(treatment, dtype=float)
    if baseline.shape != treatment.shape or baseline.size < 2:
        raise ValueError("need >= 2 paired samples of equal count")
    if (baseline <= 0).any() or (treatment <= 0).any():
        raise ValueError("throughputs must be positive")
    log_ratio = np.log(treatment) - np.log(baseline)
    n = log_ratio.size
    draws = rng.integers(0, n, size=(n_boot, n))
    boot = np.exp(log_ratio[draws].mean(axis=1))
    alpha = 1.0 - ci_level
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return {
        "ratio": float(np.exp(log_ratio.mean())),
        "ci_low": float(low),
        "ci_high": float(high),
        "n_pairs": int(n),
    }


def cv(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=float)
    return float(values.std(ddof=1) / values.mean()) if values.size > 1 else math.nan


def reps_for_half_width(n: int, ratio: float, ci_low: float, ci_high: float, target: float) -> int:
    """Repetitions per variant for a relative CI half-width <= target (CI width ~ 1/sqrt(n))."""
    half = (ci_high - ci_low) / 2 / ratio
    if half <= 0:
        return n
    return max(2, math.ceil(n * (half / target) ** 2 - 1e-9))  # tolerate float noise


def compare_phase(
    table: pd.DataFrame,
    baseline: str,
    treatment: str,
    rng: np.random.Generator,
    n_boot: int,
    ci_level: float,
    target_half_width: float,
) -> dict:
    """table: the rows of one device x model x phase."""
    wide = table.pivot_table(index="block", columns="variant", values="tps", aggfunc="first")
    for variant in (baseline, treatment):
        if variant not in wide:
            raise ValueError(f"no measurements of variant {variant!r}")
    paired = wide[[baseline, treatment]].dropna()
    base, treat = paired[baseline].to_numpy(), paired[treatment].to_numpy()
    result = paired_ratio(base, treat, rng, n_boot, ci_level)
    mw = sps.mannwhitneyu(treat, base, alternative="two-sided")
    return {
        **result,
        "median_baseline_tps": float(np.median(base)),
        "median_treatment_tps": float(np.median(treat)),
        "cv_baseline": cv(base),
        "cv_treatment": cv(treat),
        "p_mannwhitney": float(mw.pvalue),
        "half_width_rel": (result["ci_high"] - result["ci_low"]) / 2 / result["ratio"],
        "reps_for_target": reps_for_half_width(
            result["n_pairs"],
            result["ratio"],
            result["ci_low"],
            result["ci_high"],
            target_half_width,
        ),
    }
