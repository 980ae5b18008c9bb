"""benchmarks/x86_sanity.py's ratio check: the speedup prediction.json predicts for the whole
counted model, beside the one summary.csv measured for the same pair, model and phase."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import benchmark_script

x86_sanity = benchmark_script("x86_sanity")


def prediction(model: str, scale: float, prefill_gain: float) -> dict:
    return {
        "model": model,
        "scale": scale,
        "measured_as": ["sse", "avx2"],
        "phases": {"prefill": {"gain": prefill_gain, "low": 1.0, "high": 4.0}},
    }


def measured(model: str, baseline: str, gain: float) -> dict:
    return {
        "model": model,
        "baseline": baseline,
        "treatment": "avx2",
        "phase": "prefill",
        "gain": gain,
        "gain_ci_low": gain - 0.5,
        "gain_ci_high": gain + 0.5,
    }


def test_the_ratio_is_the_whole_models_predicted_speedup_against_its_measured_one():
    document = {
        "predictions": [
            prediction("whole", 1.0, 2.0),  # 3x predicted
            prediction("layer", 28.0, 9.0),  # a scaled one-layer count: not the measured model
        ]
    }
    summary = pd.DataFrame(
        [
            measured("whole", "sse", 2.5),  # 3.5x measured
            measured("whole", "other", 0.0),  # another pair of the same model
            measured("layer", "sse", 4.0),
        ]
    )
    (row,) = x86_sanity.ratio_rows(document, summary)
    assert (row["model"], row["phase"]) == ("whole", "prefill")
    assert row["predicted"] == pytest.approx(3.0) and row["measured"] == pytest.approx(3.5)
    assert row["measured_over_predicted"] == pytest.approx(3.5 / 3)
    assert row["within_tolerance"]  # 17 % off
    summary.loc[0, "gain"] = 2.7  # 3.7x: 23 % off
    (row,) = x86_sanity.ratio_rows(document, summary)
    assert not row["within_tolerance"]
