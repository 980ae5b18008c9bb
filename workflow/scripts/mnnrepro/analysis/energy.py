"""Energy per token: each pair's joules per token compared per phase where the device sampled
power, and the conditions it was sampled under."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mnnrepro.design import Design
from mnnrepro.intervals import experiment_intervals
from mnnrepro.stats import compare_phase


def energy_comparison(bench: pd.DataFrame, design: Design) -> list[dict]:
    """Per device x model x pair x phase: tokens per joule, treatment / baseline, with the
    speedup's paired statistics (where both variants have energy readings), with the run's kind
    of interval (calibrated for the looks after a run that stopped on its verdict)."""
    chosen = experiment_intervals(design)
    rng = np.random.default_rng(chosen.interval.seed)
    out = []
    if "joules_per_token" not in bench:
        return out
    live = bench[~bench["emulated"].astype(bool)].copy()
    live["joules_per_token"] = pd.to_numeric(live["joules_per_token"], errors="coerce")
    live = live[live["joules_per_token"] > 0]
    live["tps"] = 1.0 / live["joules_per_token"]  # tokens per joule, compared like tok/s
    for (device, model), group in live.groupby(["device", "model"]):
        for pair in design.comparison.pair_names:
            for phase in ("prefill", "decode"):
                part = group[(group["phase"] == phase) & group["variant"].isin(pair)]
                if set(part["variant"]) != set(pair):
                    continue
                r = compare_phase(part, *pair, chosen.interval, chosen.target_half_width, rng)
                if r["n_pairs"] < 2:
                    continue
                out.append(
                    {
                        "device": device,
                        "model": model,
                        "baseline": pair[0],
                        "treatment": pair[1],
                        "phase": phase,
                        "n_pairs": r["n_pairs"],
                        "baseline_joules_per_token": 1 / r["median_baseline_tps"],
                        "treatment_joules_per_token": 1 / r["median_treatment_tps"],
                        "tokens_per_joule_ratio": r["ratio"],
                        "ci_low": r["ci_low"],
                        "ci_high": r["ci_high"],
                    }
                )
    return out


def energy_conditions(bench: pd.DataFrame) -> list[dict]:
    """Per device x variant: how many phase measurements took their power from a recorded
    window, an inferred one, or fell back to the invocation's mean, and in how many
    invocations the device was charging (a phone's battery current is then the charger's
    balance, not what the SoC draws)."""
    if "power_window" not in bench:
        return []
    rows = bench[bench["power_window"].notna() & ~bench["emulated"].astype(bool)]
    out = []
    for (device, variant), part in rows.groupby(["device", "variant"]):
        windows = part["power_window"].astype(str)
        charging = part.drop_duplicates(["block"]).get("charging")
        out.append(
            {
                "device": device,
                "variant": variant,
                "recorded": int((windows == "recorded").sum()),
                "inferred": int((windows == "inferred").sum()),
                "invocation_mean": int(windows.str.startswith("invocation mean").sum()),
                "charging_invocations": int(
                    (charging.astype(str) == "True").sum() if charging is not None else 0
                ),
            }
        )
    return out
