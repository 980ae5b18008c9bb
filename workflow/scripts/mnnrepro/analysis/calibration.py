"""How well the statistics keep their promises, by simulation: coverage of the speedup CI, the
false-invalid and detection rates of the A/A rule, and coverage after precision-on-demand
stopping. Used by benchmarks/ci_coverage.py (committed results) and by the fast tests.

Noise models of one invocation's tok/s (its log, sd `cv`), on top of a per-block factor that
both variants share (the machine's state):
- `lognormal`: independent log-normal noise;
- `t3`: heavy tails, Student t with 3 degrees of freedom scaled to sd `cv`;
- `drift`: the machine drifts within the run (a 15 % trend over the schedule plus AR(1) noise,
  phi 0.7, between consecutive invocations), with the A B / B A order of the real schedule."""

from __future__ import annotations

import math

import numpy as np

from mnnrepro.sides import aa_stable
from mnnrepro.stats import t_interval

NOISE = ("lognormal", "t3", "drift")
TRUE_RATIO = 1.3  # the simulated treatment's true speedup


def simulate(
    rng: np.random.Generator, sims: int, n: int, ratio: float, noise: str, cv: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, treatment) tok/s, each (sims, n): n interleaved blocks per simulation."""
    block = 100.0 * np.exp(rng.normal(0, 0.1, (sims, n, 1)))
    if noise == "lognormal":
        eps = rng.normal(0, cv, (sims, n, 2))
    elif noise == "t3":
        eps = rng.standard_t(3, (sims, n, 2)) * cv / math.sqrt(3)
    elif noise == "drift":
        steps = rng.normal(0, cv * math.sqrt(1 - 0.7**2), (sims, 2 * n))
        ar = np.empty_like(steps)
        ar[:, 0] = rng.normal(0, cv, sims)
        for i in range(1, 2 * n):
            ar[:, i] = 0.7 * ar[:, i - 1] + steps[:, i]
        factor = ar + 0.15 * np.arange(2 * n) / (2 * n)
        order = np.arange(n) % 2  # block b runs baseline first when b is even (A B, B A, ...)
        first, second = factor[:, 0::2], factor[:, 1::2]
        base_eps = np.where(order == 0, first, second)
        treat_eps = np.where(order == 0, second, first)
        eps = np.stack([base_eps, treat_eps], axis=-1)
    else:
        raise ValueError(f"noise must be one of {NOISE}")
    tps = block * np.exp(eps)
    return tps[..., 0], ratio * tps[..., 1]


def bootstrap_intervals(log_ratios, ci_level, rng, n_boot=2000):
    """The percentile bootstrap of stats.bootstrap_interval, for many simulations at once
    (the same resamples for every simulation: each interval is still the bootstrap's)."""
    n = log_ratios.shape[1]
    counts = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(n_boot)])
    boot = np.exp(log_ratios @ counts.T / n)
    alpha = 1 - ci_level
    return tuple(np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=1))


def coverage(method: str, n: int, noise: str, sims: int, seed: int, ci_level=0.95) -> float:
    """Share of simulated experiments whose CI holds the true ratio."""
    rng = np.random.default_rng(seed)
    base, treat = simulate(rng, sims, n, TRUE_RATIO, noise)
    log_ratios = np.log(treat) - np.log(base)
    if method == "t":
        low, high = t_interval(log_ratios, ci_level)
    else:
        low, high = bootstrap_intervals(log_ratios, ci_level, rng)
    return float(np.mean((low <= TRUE_RATIO) & (high >= TRUE_RATIO)))


def aa_invalid_rate(
    n: int, drift: float, margin: float, sims: int, seed: int, cv: float = 0.02, noise="lognormal"
) -> float:
    """Share of runs the A/A rule marks invalid, judging both phases (independent noise), when
    the second baseline run is really `drift` faster (0 = no drift)."""
    rng = np.random.default_rng(seed)
    stable = np.ones(sims, dtype=bool)
    for _phase in ("prefill", "decode"):
        base, again = simulate(rng, sims, n, 1 + drift, noise, cv)
        low, high = t_interval(np.log(again) - np.log(base), 0.95)
        stable &= aa_stable(low, high, margin)
    return float(1 - stable.mean())


def stopping_coverage(
    n_min: int,
    n_max: int,
    target: float,
    noise: str,
    sims: int,
    seed: int,
    cv=0.05,
    first_look_df: bool = True,
) -> dict:
    """Precision on demand with one CI: coverage where the run stopped and the blocks used
    (joint_stopping with a single CI). With first_look_df=False the CI is the usual one
    (n - 1 df), to show what that would cost."""
    result = joint_stopping(
        n_min, n_max, target, cv, 1, sims, seed, noise=noise, first_look_df=first_look_df
    )
    return {"coverage": result["coverage"], "mean_blocks": result["mean_blocks"]}


def joint_stopping(
    n_min: int,
    n_max: int,
    target: float,
    cv: float,
    cis: int,
    sims: int,
    seed: int,
    noise: str = "lognormal",
    first_look_df: bool = True,
) -> dict:
    """Precision on demand as a run with several judged CIs stops: after n_min blocks, when
    every one of `cis` CIs (pairs x phases, independent, `noise` of sd cv per invocation) has
    a relative half-width of at most target, or at n_max. Returns the mean blocks used, the
    share of runs that reached the target, and the coverage of the CIs where the run stopped
    (t quantile at n_min - 1 degrees of freedom, as the summary computes it; first_look_df=False:
    the usual n - 1)."""
    rng = np.random.default_rng(seed)
    pairs = [simulate(rng, sims, n_max, TRUE_RATIO, noise, cv) for _ in range(cis)]
    log_ratios = np.stack([np.log(t) - np.log(b) for b, t in pairs], axis=1)  # sims, cis, n
    stopped = np.full(sims, n_max)
    reached = np.zeros(sims, dtype=bool)
    covered = np.zeros((sims, cis), dtype=bool)
    open_ = np.ones(sims, dtype=bool)
    df = n_min - 1 if first_look_df else None
    for n in range(n_min, n_max + 1):
        low, high = t_interval(log_ratios[..., :n], 0.95, df)
        ratio = np.exp(log_ratios[..., :n].mean(axis=-1))
        met = ((high - low) / 2 / ratio <= target).all(axis=1)
        done = open_ & (met | (n == n_max))
        covered[done] = ((low <= TRUE_RATIO) & (high >= TRUE_RATIO))[done]
        reached |= done & met
        stopped[done] = n
        open_ &= ~done
    return {
        "mean_blocks": float(stopped.mean()),
        "reached_target": float(reached.mean()),
        "coverage": float(covered.mean()),
    }
