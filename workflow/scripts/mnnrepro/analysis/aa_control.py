"""The A/A control: the baseline measured against its twin, whose gain must stay within the margin;
what the summary says of it per phase."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mnnrepro.design import Design
from mnnrepro.intervals import ChosenInterval
from mnnrepro.phases import PHASES
from mnnrepro.sides import aa_drifted, aa_stable
from mnnrepro.stats import compare_phase


def aa_controls(
    group: pd.DataFrame, design: Design, chosen: ChosenInterval, rng: np.random.Generator
) -> dict:
    """Per phase: the baseline's 'speedup' over its own second run."""
    again = design.comparison.aa_variant
    if not again or again not in set(group["variant"]):
        return {}
    baseline, interval = design.comparison.baseline, chosen.interval
    return {
        phase: compare_phase(part, baseline, again, interval, chosen.target_half_width, rng)
        for phase, part in ((p, group[group["phase"] == p]) for p in PHASES)
    }


def aa_problems(aa: dict, margin: float) -> list[str]:
    """The A/A rule (equivalence): in each phase the CI of the baseline's ratio to its own
    second run lies within [1/(1+margin), 1+margin]; else the run is invalid, saying whether
    it drifted (CI wholly outside) or could not show stability (CI wider than the margin)."""
    problems = []
    for phase, r in aa.items():
        if aa_stable(r["ci_low"], r["ci_high"], margin):
            continue
        why = (
            "drift, order or warm-up effect"
            if aa_drifted(r["ci_low"], r["ci_high"], margin)
            else "not shown stable: more repetitions or a quieter device needed"
        )
        problems.append(
            f"A/A control ({phase}): baseline vs itself, CI [{r['ci_low']:.3f}, "
            f"{r['ci_high']:.3f}] not within +-{margin:.0%} ({why})"
        )
    return problems


def aa_fields(aa: dict, phase: str, margin: float) -> dict:
    """The A/A control's interval in this phase, and the margin it is held to."""
    return {
        "aa_ci_low": aa.get(phase, {}).get("ci_low"),
        "aa_ci_high": aa.get(phase, {}).get("ci_high"),
        "aa_margin": margin if aa else None,
    }
