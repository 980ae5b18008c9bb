"""Stopping on the verdict (`bench.repetitions: {..., until: verdict}`): the anytime-valid
interval, the rows a run judges and their thresholds, the rule on those rows, and the rule in
a real schedule of real invocations (it decides from the raw records, so a resumed run stops
at the same block). Coverage and phone time: benchmarks/sequential_stopping.py."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import design_of, design_stats
from test_bench import BENCH, CountingDevice, specs, staged

from mnnrepro.engines.pairs import modes_of, modes_record
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json
from mnnrepro.intervals import run_intervals
from mnnrepro.runs.benchmark import STEPS, run_schedule
from mnnrepro.runs.precision import StoppingRule, verdict_stop, verdict_thresholds
from mnnrepro.runs.schedule import interleaved
from mnnrepro.runs.stopping_rows import row_state
from mnnrepro.sequential import sequential_t_level
from mnnrepro.stats import anytime_interval, t_interval

RULE = {"min": 6, "max": 30, "target_half_width": 0.03, "until": "verdict"}


def stop_rule(repetitions: dict, ci_level: float = 0.95) -> StoppingRule:
    return StoppingRule.of(repetitions, run_intervals(design_stats(ci_level=ci_level), repetitions))


def test_the_anytime_interval_is_wider_than_t_holds_the_mean_and_narrows():
    rng = np.random.default_rng(3)
    ratios = rng.normal(0.5, 0.05, 40)
    low, high = anytime_interval(ratios[:4], 0.95)
    assert not np.isfinite([low, high]).all()  # too few blocks for the mixture to bound it
    assert np.isfinite(anytime_interval(ratios[:5], 0.95)).all()  # nu = n - 1: from 5 on
    widths = []
    for n in (6, 10, 20, 40):
        low, high = anytime_interval(ratios[:n], 0.95)
        t_low, t_high = t_interval(ratios[:n], 0.95)
        assert low < t_low < np.exp(ratios[:n].mean()) < t_high < high
        widths.append(np.log(high / low))
    assert widths == sorted(widths, reverse=True)


def test_its_coverage_holds_at_every_look():
    """Time-uniform: the share of simulated runs whose interval ever misses the mean, looking
    after every block up to 60, stays below 5 % (the plain t interval's does not)."""
    rng = np.random.default_rng(5)
    ratios = rng.normal(0.0, 1.0, (1000, 60))
    anytime_miss = t_miss = np.zeros(1000, bool)
    for n in range(3, 61):
        low, high = anytime_interval(ratios[:, :n], 0.95)
        anytime_miss = anytime_miss | (low > 1) | (high < 1)
        low, high = t_interval(ratios[:, :n], 0.95)
        t_miss = t_miss | (low > 1) | (high < 1)
    assert anytime_miss.mean() <= 0.05 < 0.2 < t_miss.mean()


ON = EngineRecord.of(
    {
        "engine": "sme2-on",
        "kind": "build",
        "target_arch": "aarch64",
        "sme2": {"sme2_kernel_count": 14},
    }
)
OFF = EngineRecord.of(
    {
        "engine": "sme2-off",
        "kind": "build",
        "target_arch": "aarch64",
        "sme2": {"sme2_kernel_count": 0},
    }
)
VARIANTS = {
    "off": {"engine": "sme2-off"},
    "on": {"engine": "sme2-on"},
    "off-again": {"engine": "sme2-off"},
}
COMPARISON = {
    "baseline": "off",
    "treatment": "on",
    "claims": {"prefill": 0.81, "decode": 0.13},
    "tolerance": 0.1,
    "aa_control": True,
    "aa_margin": 0.05,
    "on_non_sme2_device": "fallback-check",
}
DESIGN = design_of({"comparison": COMPARISON, "variants": VARIANTS})


def thresholds(design, engines, facts) -> dict:
    """The verdict thresholds of the pairs' modes on a device, as the workflow decides them
    (engines.pairs.modes_record, rule decide_pair_modes)."""
    return verdict_thresholds(design, modes_of(modes_record(design, engines, facts)))


def test_each_row_is_settled_by_the_thresholds_of_its_own_verdict():
    engines = {"sme2-on": ON, "sme2-off": OFF}
    phone = thresholds(DESIGN, engines, {"device": "p", "sme2": True})
    assert phone["off/on prefill"] == pytest.approx([1.71, 1.91])  # the claim band
    assert phone["off/on decode"] == pytest.approx([1.03, 1.23])
    assert phone["off/off-again prefill"] == pytest.approx([1 / 1.05, 1.05])  # the A/A margin
    assert phone["off/on prefill>decode"] == [1.0]  # the mechanism check
    old = thresholds(DESIGN, engines, {"device": "p", "sme2": False})
    assert old["off/on prefill"] == pytest.approx([0.9])  # the fallback check's floor
    host = EngineRecord.of(
        {**ON.as_written, "target_arch": "x86_64", "sme2": {"sme2_kernel_count": 0}}
    )
    equal = thresholds(DESIGN, {"sme2-on": host, "sme2-off": OFF}, {"device": "h"})
    assert equal["off/on decode"] == pytest.approx([0.9, 1.1])  # the equality band
    unclaimed = thresholds(
        design_of({"comparison": {**COMPARISON, "claims": {}}, "variants": VARIANTS}),
        engines,
        {"device": "p", "sme2": True},
    )
    assert unclaimed["off/on prefill"] is None  # settled by precision


def blocks_of(log_speedup: float, n: int, sd: float = 0.01) -> np.ndarray:
    return log_speedup + np.random.default_rng(1).normal(0, sd, n)


def test_the_rule_stops_when_every_row_is_settled_and_says_where_each_settled():
    rows = {"inside": [1.71, 1.91], "outside": [1.03, 1.23], "aa": [1 / 1.05, 1.05]}
    ratios = {"inside": blocks_of(np.log(1.81), 8), "outside": blocks_of(0.0, 8)}
    ratios["aa"] = blocks_of(0.0, 8)
    rule = stop_rule(RULE)
    assert verdict_stop(ratios, rows, rule, 5, 0.0) is None  # before min
    stop = verdict_stop(ratios, rows, rule, 8, 0.0)
    assert stop["reason"] == "every judged row settled after 8 blocks"
    assert all(s["settled"] and s["first_settled_at"] == 6 for s in stop["rows"].values())
    # a row whose interval straddles its band's edge keeps the run going, to max
    edge = {"edge": [1.71, 1.91]}
    on_edge = {"edge": blocks_of(np.log(1.71), 30, sd=0.05)}
    assert verdict_stop(on_edge, edge, rule, 12, 0.0) is None
    stop = verdict_stop(on_edge, edge, rule, 30, 0.0)
    assert stop["reason"] == "max 30 blocks reached; unsettled: ['edge']"
    assert not stop["rows"]["edge"]["settled"]


def test_the_budget_ends_the_run_before_a_block_that_would_pass_it():
    """100 s a block so far, a budget of 1250 s: after 12 blocks (1200 s) the next would pass
    it, so the run stops there, not one block later (1300 s)."""
    edge = {"edge": [1.71, 1.91]}
    on_edge = {"edge": blocks_of(np.log(1.71), 30, sd=0.05)}
    rule = stop_rule({**RULE, "budget_s": 1250})
    assert verdict_stop(on_edge, edge, rule, 11, 1100.0) is None
    stop = verdict_stop(on_edge, edge, rule, 12, 1200.0)
    assert stop["reason"].startswith(
        "device-time budget 1250 s: the next look (block 13) would pass it at 100 s a block"
    )
    assert verdict_stop(on_edge, edge, rule, 12, 1140.0) is None  # 95 s a block: it fits


def test_a_budget_that_cannot_reach_the_first_look_ends_the_run_with_one_line():
    """330 s a block (110 s invocations, three a block) and a 2700-s budget: the first look,
    block 10, would take 3300 s, so the run ends after its first block, naming the key."""
    from mnnrepro.errors import ReproError
    from mnnrepro.runs.precision import verdict_decision

    rule = stop_rule({**RULE, "min": 10, "budget_s": 2700})
    records = [
        {"status": "ok", "variant": v, "invocation": {"block": 0}, "device_time_s": {"total": 110}}
        for v in ("a", "b", "c")
    ]
    with pytest.raises(ReproError, match=r"^bench.repetitions.budget_s: 2700 s cannot reach"):
        verdict_decision(records, 1, rule, {}, 0.0)
    assert verdict_decision(records, 1, stop_rule({**RULE, "min": 10}), {}, 0.0) is None


def test_with_planned_looks_the_budget_ends_the_run_at_the_last_look_it_can_afford():
    """Looks at 6, 18 and 30 blocks, 100 s a block, a budget of 2000 s: at block 6 the next
    look (18: 1800 s) fits; at 18 the next (30: 3000 s) does not, so the run stops at 18, a
    planned look, and never between looks, whatever it spent."""
    edge = {"edge": [1.71, 1.91]}
    on_edge = {"edge": blocks_of(np.log(1.71), 30, sd=0.05)}
    rule = stop_rule({**RULE, "looks": 3, "budget_s": 2000})
    assert rule.looks == (6, 18, 30)
    assert verdict_stop(on_edge, edge, rule, 6, 600.0) is None
    assert verdict_stop(on_edge, edge, rule, 12, 1990.0) is None  # not a look
    stop = verdict_stop(on_edge, edge, rule, 18, 1800.0)
    assert stop["blocks"] == 18 and "the next look (block 30) would pass it" in stop["reason"]


def test_a_row_without_a_claim_holds_the_run_only_where_a_target_is_named():
    """The quickstart's rule: no target half-width, so its unclaimed gains settle nothing and
    the mechanism check alone decides; with a target they wait until they are that narrow."""
    rows = {"gain": None, "prefill>decode": [1.0]}
    ratios = {"gain": blocks_of(0.5, 8, sd=0.2), "prefill>decode": blocks_of(0.3, 8)}
    no_target = {k: v for k, v in RULE.items() if k != "target_half_width"}
    stop = verdict_stop(ratios, rows, stop_rule(no_target), 6, 0.0)
    assert stop["reason"] == "every judged row settled after 6 blocks"
    assert stop["rows"]["gain"]["low"] is not None  # still reported with its interval
    with_target = stop_rule({**no_target, "target_half_width": 0.03})
    assert verdict_stop(ratios, rows, with_target, 6, 0.0) is None
    # the mechanism check is not settled by the absence of a target
    unsure = {"gain": ratios["gain"], "prefill>decode": blocks_of(0.0, 8)}
    assert verdict_stop(unsure, rows, stop_rule({**no_target, "max": 30}), 8, 0.0) is None


def test_with_planned_looks_it_stops_only_at_them_on_the_calibrated_t_interval():
    """`looks: 2` between 6 and 10: a row settled at block 7 waits for block 10; at a look the
    interval is Student t at the level calibrated for those two looks (97.1 %: narrower than
    Bonferroni's 97.5 %, wider than a single look's 95 %), which the summary reports too."""
    from mnnrepro.intervals import run_intervals
    from mnnrepro.repetitions import Repetitions

    rule = {"min": 6, "max": 10, "until": "verdict", "looks": 2}
    assert Repetitions.of(rule).planned_looks() == [6, 10]
    assert Repetitions.of({**rule, "max": 30, "looks": 3}).planned_looks() == [6, 18, 30]
    level = sequential_t_level([6, 10], 0.95)
    assert 0.95 < level < 0.975
    rows = {"prefill>decode": [1.0]}
    clear = {"prefill>decode": blocks_of(0.3, 6, sd=0.1)}
    stop = verdict_stop(clear, rows, stop_rule(rule), 6, 0.0)
    assert stop["reason"] == "every judged row settled after 6 blocks"
    low, high = t_interval(clear["prefill>decode"], level)
    assert (stop["rows"]["prefill>decode"]["low"], stop["rows"]["prefill>decode"]["high"]) == (
        pytest.approx((float(low), float(high)))
    )
    chosen = run_intervals(design_stats(ci_level=0.95), rule).interval
    assert (chosen.kind, chosen.level, chosen.df) == ("t", pytest.approx(level), None)
    # settled only from block 7: not a look, so the run goes on to the next one
    late = np.r_[[0.3, 0.05, 0.5, 0.1, 0.4, 0.0], np.full(4, 0.3)]

    def so_far(n):
        return {"prefill>decode": late[:n]}

    assert verdict_stop(so_far(6), rows, stop_rule(rule), 6, 0.0) is None
    assert row_state(late[:7], [1.0], None, lambda r: t_interval(r, level))["settled"]
    assert verdict_stop(so_far(7), rows, stop_rule(rule), 7, 0.0) is None
    stop = verdict_stop(so_far(10), rows, stop_rule(rule), 10, 0.0)
    assert stop["reason"] == "every judged row settled after 10 blocks"
    assert stop["rows"]["prefill>decode"]["first_settled_at"] == 10


@pytest.mark.slow
def test_a_real_schedule_stops_on_its_records_and_a_resumed_run_stops_at_the_same_block(
    tiny_model, tmp_path
):
    """Real invocations of the tiny model; a speedup threshold no pair of runs approaches
    (1e6) settles every row as soon as its interval is finite (6 blocks); a run interrupted
    after 5 invocations and resumed keeps them and stops at the same block, with the same
    intervals."""
    rows = {"a/b prefill": [1e6], "a/b decode": [1e6]}
    rule = {**RULE, "max": 8}

    def stop(records, blocks):
        return verdict_stop_from(records, blocks, rule, rows)

    plan = interleaved(["a", "b"], 8)
    first = CountingDevice(interrupt_after=5)
    with pytest.raises(KeyboardInterrupt):
        run_schedule(first, plan, specs(), staged(first, tiny_model), BENCH, tmp_path / "r", stop)
    first.close()
    resumed = CountingDevice()
    index, stopped = run_schedule(
        resumed, plan, specs(), staged(resumed, tiny_model), BENCH, tmp_path / "r", stop
    )
    assert resumed.runs == 12 - 5 and len(index) == 12  # 6 blocks of 2, the first 5 kept
    assert stopped["reason"] == "every judged row settled after 6 blocks"
    # where each invocation's device time went; the budget counts their totals
    times = [read_json(e["raw"])["device_time_s"] for e in index]
    for steps in times:
        assert set(steps) == {*STEPS, "total"} and steps["engine"] > 0
        assert sum(steps[s] for s in STEPS) == pytest.approx(steps["total"], abs=0.01)
    assert stopped["device_s"] == pytest.approx(sum(t["total"] for t in times), abs=0.1)
    whole = CountingDevice()
    again, stopped_again = run_schedule(
        whole, plan, specs(), staged(whole, tiny_model), BENCH, tmp_path / "r", stop
    )
    assert whole.runs == 0 and again == index and stopped_again == stopped
    resumed.close()
    whole.close()


def verdict_stop_from(records, blocks, rule, rows):
    from mnnrepro.runs.precision import stopping_decision

    chosen = run_intervals(design_stats(ci_level=0.95), rule)
    return stopping_decision(records, blocks, rule, [("a", "b")], chosen, rows, 0.0)
