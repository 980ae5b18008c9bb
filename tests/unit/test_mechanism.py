"""The mechanism checks' rules (their evidence strings carry the numbers they were given)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import design_of, design_stats

from mnnrepro.analysis.mechanism import NEAR_CEILING, ceiling_check, gain_gap, gain_order_check
from mnnrepro.runs.precision import records_of_table
from mnnrepro.runs.stopping_rows import block_log_ratios

ROOT = Path(__file__).resolve().parents[2]


def row(gain, low, high):
    return {"gain": gain, "gain_ci_low": low, "gain_ci_high": high}


def gap(ratio, low, high, n=10):
    return {"ratio": ratio, "ci_low": low, "ci_high": high, "n_pairs": n}


def test_prefill_gain_over_decode_gain_is_judged_on_the_paired_gap():
    """Per-phase intervals that overlap do not decide it: the per-block gap does (the same
    blocks, so the noise both phases share cancels)."""
    overlapping = row(0.3, 0.1, 0.5), row(0.2, 0.0, 0.4)
    assert gain_order_check(*overlapping, gap(1.08, 1.02, 1.15))["status"] == "shown"
    assert gain_order_check(*overlapping, gap(1.08, 0.97, 1.2))["status"] == "inconclusive"
    check = gain_order_check(row(0.1, 0.0, 0.2), row(0.3, 0.2, 0.4), gap(0.85, 0.8, 0.9))
    assert check["status"] == "contradicted" and "prefill +10.0%" in check["evidence"]
    assert "x0.850 [0.800, 0.900]" in check["evidence"]
    none = gain_order_check(*overlapping, gap(None, None, None, 1))
    assert none["status"] == "unavailable"


def test_a_pair_that_claims_no_gain_has_no_gain_order_to_check():
    """The x86 host's two byte-identical builds (an equality check) or a phone without SME2 (a
    fallback check): 'contradicted' would blame the mechanism for noise around zero."""
    for expectation in ("no difference", "no regression"):
        prefill = {**row(-0.01, -0.03, 0.01), "expectation": expectation}
        decode = {**row(0.01, -0.01, 0.03), "expectation": expectation}
        check = gain_order_check(prefill, decode, gap(0.98, 0.9, 1.05))
        assert check["status"] == "not applicable" and expectation in check["evidence"]
    claimed = {**row(-0.01, -0.03, 0.01), "expectation": "claim"}
    check = gain_order_check(claimed, row(0.01, -0.01, 0.03), gap(0.98, 0.96, 0.99))
    assert check["status"] == "contradicted"


def test_the_summary_judges_the_gap_the_stopping_rule_settles():
    """On a real run's table (benchmarks/results/ci_halfwidth-bench.csv, a quickstart), the
    mechanism check's interval after a verdict-mode run is the stopping rule's own row's."""
    import pandas as pd

    from mnnrepro.intervals import run_intervals
    from mnnrepro.runs.precision import StoppingRule, verdict_stop

    table = pd.read_csv(ROOT / "benchmarks" / "results" / "ci_halfwidth-bench.csv")
    rule = {"min": 6, "max": 10, "until": "verdict"}
    chosen = run_intervals(design_stats(ci_level=0.95, seed=1), rule)
    found = gain_gap(table, "one-thread", "two-threads", chosen.interval)
    name = "one-thread/two-threads prefill>decode"
    logs = block_log_ratios(records_of_table(table), name)
    stopping = StoppingRule.of(rule, chosen)
    stop = verdict_stop({name: logs}, {name: [1.0]}, stopping, logs.size, 0.0)
    state = stop["rows"][name]
    assert found["n_pairs"] == logs.size == 10
    assert (found["ci_low"], found["ci_high"]) == pytest.approx((state["low"], state["high"]))
    fixed = run_intervals(design_stats(ci_level=0.95, seed=1), 10)
    t_gap = gain_gap(table, "one-thread", "two-threads", fixed.interval)
    assert t_gap["ci_high"] - t_gap["ci_low"] < found["ci_high"] - found["ci_low"]


def test_decode_faster_than_its_ceiling_is_a_broken_bound():
    over = {
        "variant": "on",
        "decode_tps": 50.0,
        "decode_ceiling_tps": 40.0,
        "bandwidth_gb_per_s": 80.0,
        "decode_bytes_per_token": 2e9,
        "decode_ceiling_share": 1.25,
    }
    check = ceiling_check(over)
    assert check["status"] == "broken bound" and "125% of a 40.0" in check["evidence"]
    assert ceiling_check({**over, "decode_ceiling_share": 1.0})["status"] == "shown"


def test_decode_near_its_ceiling_needs_the_share():
    base = {
        "variant": "on",
        "decode_tps": 30.0,
        "decode_ceiling_tps": 40.0,
        "bandwidth_gb_per_s": 80.0,
        "decode_bytes_per_token": 2e9,
    }
    near = ceiling_check({**base, "decode_ceiling_share": 0.75})
    assert near["status"] == "shown" and "75% of a 40.0 tok/s ceiling" in near["evidence"]
    far = ceiling_check({**base, "decode_ceiling_share": NEAR_CEILING / 2})
    assert far["status"] == "not shown"
    assert ceiling_check(None)["status"] == "unavailable"
    assert ceiling_check({**base, "decode_ceiling_share": None})["status"] == "unavailable"


def test_without_a_bandwidth_measurement_the_ceiling_is_unavailable_not_guessed():
    import pandas as pd

    from mnnrepro.analysis.mechanism import mechanism_table

    bench = pd.DataFrame(
        {
            "device": "host",
            "model": "m",
            "variant": ["a", "a"],
            "phase": ["prefill", "decode"],
            "tps": [100.0, 20.0],
            "engine": "e",
            "thread_num": 2,
            "emulated": False,
            "power_source": None,
            "joules_per_token": None,
        }
    )
    layouts = {("m", "mnn"): {"decode_bytes_per_token": 10**9, "prefill_ops_per_token": 2e9}}
    config = {"experiment": "x", "comparison": {"baseline": "a", "treatment": "b"}}
    (row,) = mechanism_table(bench, layouts, {}, design_of(config)).to_dict("records")
    assert row["decode_ceiling_tps"] is None and row["prefill_gops"] == 200.0
    assert ceiling_check(row)["status"] == "unavailable"
    # an engine that reads the GGUF is measured against the GGUF's layout, not MNN's
    layouts[("m", "gguf")] = {"decode_bytes_per_token": 10**9, "prefill_ops_per_token": 4e9}
    (row,) = mechanism_table(bench, layouts, {}, design_of(config), {"e": "gguf"}).to_dict(
        "records"
    )
    assert row["prefill_gops"] == 400.0


def test_bandwidth_off_takes_the_probe_out_of_the_workflow(root, tmp_path):
    import yaml
    from conftest import run_snakemake

    config = yaml.safe_load((root / "tests/workflow/config-tiny.yaml").read_text())
    config["bandwidth"] = {"enabled": False}
    path = tmp_path / "no-probe.yaml"
    path.write_text(yaml.safe_dump(config))
    args = ("-n", "--configfile", str(path), "--directory", str(tmp_path))
    dry = run_snakemake(root, *args).stdout
    assert "explain_gain" in dry
    assert "measure_bandwidth" not in dry and "build_bandwidth_probe" not in dry


def test_the_share_of_the_ceiling_is_an_interval_over_speeds_and_bandwidth_samples():
    """The decode speeds' t interval (stats.t_interval on their logs) over the ceiling at the
    highest bandwidth sample gives the low end, over the lowest the high end; one speed gives
    none (the check then judges the point alone)."""
    import numpy as np
    import pandas as pd

    from mnnrepro.analysis.mechanism import ceiling_tps, share_interval
    from mnnrepro.stats import t_interval

    speeds = [20.0, 22.0, 21.0, 19.5]
    bw = {"median_gb_per_s": 30.0, "min_gb_per_s": 28.0, "max_gb_per_s": 33.0}
    got = share_interval(pd.DataFrame({"tps": speeds}), bw, 1e9, 0.95)
    low, high = t_interval(np.log(speeds), 0.95)
    assert got["decode_ceiling_share_low"] == pytest.approx(float(low) / ceiling_tps(33.0, 1e9))
    assert got["decode_ceiling_share_high"] == pytest.approx(float(high) / ceiling_tps(28.0, 1e9))
    assert got["decode_ceiling_share_low"] < 20.75 / 30 < got["decode_ceiling_share_high"]
    one = share_interval(pd.DataFrame({"tps": [20.0]}), bw, 1e9, 0.95)
    assert one == {"decode_ceiling_share_low": None, "decode_ceiling_share_high": None}
