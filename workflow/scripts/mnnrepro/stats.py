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
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the tables are the callers'; scipy is imported where a CI or p-value is
    import pandas as pd  # computed (many jobs that read this module's names compute neither)

PHASES = ("prefill", "decode")  # what every benchmark measures, in this order
# what a benchmark of a vision model also measures (bench.vision), in this order: the image
# encoder, the image prompt's prefill, and the time to the first token, which holds both
VISION_PHASES = ("vision", "image_prefill", "first_token")
ALL_PHASES = PHASES + VISION_PHASES
SPANNING_PHASES = ("first_token",)  # its time holds other phases' times

INTERVALS = ("t", "bootstrap", "anytime")
# the mixture's prior scale (Lindon et al.'s phi): where, in blocks, the interval is tightest
ANYTIME_PHI = 1.0


def interval_name(stats_cfg: dict, df: int | None) -> str:
    """The interval `stats.interval` gives, as the summary and the job messages name it."""
    if stats_cfg.get("interval", "t") == "bootstrap":
        return f"paired bootstrap ({stats_cfg['n_boot']} resamples)"
    if stats_cfg.get("interval", "t") == "anytime":
        return "anytime-valid t on log ratios (Lindon et al.)"
    if looks := stats_cfg.get("planned_looks"):
        return (
            f"t on log ratios at {stats_cfg['ci_level']:.1%} per look (Bonferroni over "
            f"{looks} planned looks)"
        )
    return "t on log ratios" + (f" (df {df}, after stopping)" if df is not None else "")


def anytime_interval(
    log_ratios: np.ndarray, ci_level: float, phi: float = ANYTIME_PHI
) -> tuple[np.ndarray, np.ndarray]:
    """A confidence sequence for the mean log ratio, per row of log_ratios (..., n): (low,
    high) as ratios, which hold the mean with probability ci_level at every n at once, so a
    run may stop on what the interval shows (the verdict) and keep its coverage.

    The anytime-valid t interval of a Gaussian mean with unknown variance (the intercept-only
    linear model of Lindon, Ham, Tingley & Bojinov, "Anytime-Valid Linear Models and
    Regression Adjusted Causal Inference in Randomized Experiments", 2022, arXiv:2210.08589;
    the same closed form as the `savvi` package's LinearRegression, nu = n - 2): a normal
    mixture over the mean, scale phi, against the t statistic. Infinite while n is too small
    for the mixture to bound it (n < 6 at 95 % with phi 1). Coverage under the project's
    noise scenarios: benchmarks/results/sequential_stopping.md."""
    log_ratios = np.asarray(log_ratios, dtype=float)
    n = log_ratios.shape[-1]
    mean = log_ratios.mean(axis=-1)
    if n < 3:
        return np.exp(mean * np.nan), np.exp(mean * np.nan)
    se = log_ratios.std(axis=-1, ddof=1) / math.sqrt(n)
    alpha, nu, r = 1.0 - ci_level, n - 2, phi / (phi + n)
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
    ci_level: float,
    interval: str = "t",
    rng: np.random.Generator | None = None,
    n_boot: int = 10000,
    df: int | None = None,
) -> dict:
    baseline = np.asarray(baseline, dtype=float)
    treatment = np.asarray(treatment, dtype=float)
    if baseline.shape != treatment.shape or baseline.size < 2:
        raise ValueError("need >= 2 paired samples of equal count")
    if (baseline <= 0).any() or (treatment <= 0).any():
        raise ValueError("throughputs must be positive")
    log_ratio = np.log(treatment) - np.log(baseline)
    low, high = log_ratio_interval(log_ratio, ci_level, interval, rng, n_boot, df)
    return {
        "ratio": float(np.exp(log_ratio.mean())),
        "ci_low": low,
        "ci_high": high,
        "n_pairs": int(log_ratio.size),
        "p_wilcoxon": wilcoxon_p(log_ratio),
    }


def log_ratio_interval(
    log_ratio: np.ndarray,
    ci_level: float,
    interval: str = "t",
    rng: np.random.Generator | None = None,
    n_boot: int = 10000,
    df: int | None = None,
) -> tuple[float, float]:
    """The configured kind of interval (`stats.interval`) of the mean of per-block log ratios,
    as ratios."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    if interval == "t":
        low, high = t_interval(log_ratio, ci_level, df)
    elif interval == "anytime":
        low, high = anytime_interval(log_ratio, ci_level)
    else:
        low, high = bootstrap_interval(log_ratio, ci_level, rng or np.random.default_rng(0), n_boot)
    return float(low), float(high)


def stopping_df(min_blocks: int) -> int:
    """Degrees of freedom of the CI after precision on demand (see t_interval)."""
    return min_blocks - 1


def wilcoxon_p(log_ratio: np.ndarray) -> float:
    """Two-sided paired Wilcoxon signed-rank p-value of the log ratios (exact at small n);
    1.0 when every pair is a tie (nothing to rank)."""
    if not np.any(log_ratio != 0):
        return 1.0
    from scipy import stats as sps

    return float(sps.wilcoxon(log_ratio, alternative="two-sided").pvalue)


def aa_stable(low, high, margin: float):
    """The A/A rule: the CI of the baseline's ratio to itself lies within [1/(1+m), 1+m].
    Works on numbers (the summary) and on arrays of simulated CIs (the calibration)."""
    return (low >= 1 / (1 + margin)) & (high <= 1 + margin)


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


def reps_text(reps: int) -> str:
    """How a table says a reps_for_half_width result."""
    return f"more than {REPS_CAP}" if reps > REPS_CAP else str(reps)


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
    stats: dict,
    rng: np.random.Generator | None = None,
    df: int | None = None,
) -> dict:
    """table: the rows of one device x model x phase; stats: the config's `stats` section;
    df: see t_interval."""
    paired = paired_blocks(table, baseline, treatment)
    base, treat = paired[baseline].to_numpy(), paired[treatment].to_numpy()
    result = paired_ratio(
        base,
        treat,
        stats["ci_level"],
        stats.get("interval", "t"),
        rng or np.random.default_rng(stats.get("seed", 0)),
        stats.get("n_boot", 10000),
        df,
    )
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
            stats["target_half_width"],
        ),
    }


def block_range(repetitions) -> tuple[int, int, float | None]:
    """(min blocks, max blocks, target half-width or None) of `bench.repetitions`."""
    if isinstance(repetitions, dict):
        return repetitions["min"], repetitions["max"], repetitions.get("target_half_width")
    return repetitions, repetitions, None


def stops_on_verdict(repetitions) -> bool:
    """`bench.repetitions: {..., until: verdict}`: the run stops when every judged row is
    settled, so every interval of it must be anytime-valid."""
    return isinstance(repetitions, dict) and repetitions.get("until") == "verdict"


def planned_looks(repetitions) -> list[int] | None:
    """The blocks at which a run that stops on its verdict with `looks` may stop: that many
    evenly spaced blocks from `min` to `max`, both included. None: every block from `min`."""
    if not stops_on_verdict(repetitions) or not repetitions.get("looks"):
        return None
    n_min, n_max, k = repetitions["min"], repetitions["max"], repetitions["looks"]
    return sorted({round(n_min + i * (n_max - n_min) / (k - 1)) for i in range(k)})


def run_intervals(stats_cfg: dict, repetitions) -> tuple[dict, int | None]:
    """The `stats` section and the t quantile's degrees of freedom every interval of a run with
    these repetitions is computed with: the summary's, the mechanism check's, the sweep's and
    the stopping rule's own (stopping_interval).

    After a run that stopped on its verdict at any block: the anytime-valid interval. At one of
    K planned looks (`looks`): Student t at level 1 - (1 - ci_level) / K, so that the chance
    that any of the K looks misses is at most 1 - ci_level (Bonferroni; conservative, and far
    narrower than an anytime interval when K is small). After precision on demand: t with the
    first look's degrees of freedom (ci_df). Else the configured interval."""
    if not stops_on_verdict(repetitions):
        return stats_cfg, ci_df(repetitions)
    looks = planned_looks(repetitions)
    if looks is None:
        return {**stats_cfg, "interval": "anytime"}, None
    level = 1 - (1 - stats_cfg["ci_level"]) / len(looks)
    return {**stats_cfg, "interval": "t", "ci_level": level, "planned_looks": len(looks)}, None


def stopping_interval(repetitions, ci_level: float):
    """log ratios -> (low, high): the interval a rule that stops on the verdict judges on, the
    one the summary then reports (run_intervals)."""
    cfg, df = run_intervals({"ci_level": ci_level}, repetitions)
    return lambda logs: log_ratio_interval(logs, cfg["ci_level"], cfg["interval"], None, 0, df)


def ci_df(repetitions) -> int | None:
    """Degrees of freedom of the t quantile the summary uses for a run with these settings."""
    n_min, _, target = block_range(repetitions)
    return stopping_df(n_min) if target is not None else None
