"""bench.csv + validity checks -> summary.csv and summary.json (device x model x phase)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mnnrepro import verdict as vd
from mnnrepro.stats import compare_phase

SUMMARY_COLUMNS = [
    "experiment",
    "device",
    "model",
    "phase",
    "baseline",
    "treatment",
    "n_pairs",
    "median_baseline_tps",
    "median_treatment_tps",
    "cv_baseline",
    "cv_treatment",
    "ratio",
    "ci_low",
    "ci_high",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "ci_level",
    "n_boot",
    "seed",
    "p_mannwhitney",
    "half_width_rel",
    "reps_for_target",
    "claim_gain",
    "tolerance",
    "emulated",
    "checks_passed",
    "verdict",
    "verdict_reason",
]
PHASES = ("prefill", "decode")


def failed_checks(validity: dict) -> list[str]:
    return [f"{c['name']}: {c['evidence']}" for c in validity["checks"] if not c["passed"]]


def summarize(
    bench: pd.DataFrame, validity: dict[tuple[str, str], dict], config: dict
) -> pd.DataFrame:
    comparison, stats_cfg = config["comparison"], config["stats"]
    rng = np.random.default_rng(stats_cfg["seed"])
    claims = comparison.get("claims", {})
    rows = []
    for (device, model), group in bench.groupby(["device", "model"], sort=True):
        emulated = bool(group["emulated"].any())
        failed = failed_checks(validity[(device, model)])
        for phase in PHASES:
            part = group[group["phase"] == phase]
            result = compare_phase(
                part,
                comparison["baseline"],
                comparison["treatment"],
                rng,
                stats_cfg["n_boot"],
                stats_cfg["ci_level"],
                stats_cfg["target_half_width"],
            )
            claim = claims.get(phase)
            speed = vd.claim_verdict(
                result["ci_low"] - 1, result["ci_high"] - 1, claim, comparison["tolerance"]
            )
            verdict, reason = vd.final_verdict(speed, failed, emulated)
            rows.append(
                {
                    "experiment": config["experiment"],
                    "device": device,
                    "model": model,
                    "phase": phase,
                    "baseline": comparison["baseline"],
                    "treatment": comparison["treatment"],
                    **result,
                    "gain": result["ratio"] - 1,
                    "gain_ci_low": result["ci_low"] - 1,
                    "gain_ci_high": result["ci_high"] - 1,
                    "ci_level": stats_cfg["ci_level"],
                    "n_boot": stats_cfg["n_boot"],
                    "seed": stats_cfg["seed"],
                    "claim_gain": claim,
                    "tolerance": comparison["tolerance"],
                    "emulated": emulated,
                    "checks_passed": not failed,
                    "verdict": verdict,
                    "verdict_reason": reason,
                }
            )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def summary_document(
    summary: pd.DataFrame, validity: dict[tuple[str, str], dict], config: dict
) -> dict:
    return {
        "experiment": config["experiment"],
        "comparison": config["comparison"],
        "stats": config["stats"],
        "bench": config["bench"],
        "verdict_rule": vd.RULE,
        "speedup_method": (
            "geometric mean over interleaved blocks of treatment/baseline tok/s; percentile "
            "CI from a paired bootstrap over blocks; Mann-Whitney U two-sided p-value"
        ),
        "validity": [{"device": d, "model": m, **v} for (d, m), v in sorted(validity.items())],
        "rows": summary.replace({np.nan: None}).to_dict(orient="records"),
    }
