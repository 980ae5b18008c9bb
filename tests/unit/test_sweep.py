"""`bench.sweep`: which points run, what each point measures, and the config checks."""

from __future__ import annotations

import copy
from dataclasses import replace
from types import SimpleNamespace

import pytest
import yaml
from conftest import design_of, full_bench, full_variants

from mnnrepro.config import ConfigError
from mnnrepro.plan.checks import check
from mnnrepro.plan.plan import plan_of
from mnnrepro.sweep_plan import SweepPoint, sweep_points


@pytest.fixture
def base_config(root):
    """The tiny test experiment: its pair differs in thread_num (one vs two threads)."""
    return yaml.safe_load((root / "tests/workflow/config-tiny.yaml").read_text())


def config_with(base_config, **sweep):
    cfg = copy.deepcopy(base_config)
    cfg["bench"]["sweep"] = sweep
    return cfg


def bench_and_variants(config):
    """What sweep_points plans from: `bench` (sections.Bench) and the variants (design.Variant)."""
    return full_bench(**config["bench"]), full_variants(config["variants"])


@pytest.fixture
def same_threads(base_config):
    cfg = copy.deepcopy(base_config)
    for variant in cfg["variants"].values():
        variant.setdefault("runtime", {})["thread_num"] = 4
    return cfg


def test_each_dimension_is_varied_around_the_main_point(same_threads):
    main_p = same_threads["bench"]["prompt_tokens"]
    cfg = config_with(same_threads, prompt_tokens=[64, main_p], thread_num=[1, 4])
    points = sweep_points(*bench_and_variants(cfg))
    n = cfg["bench"]["generate_tokens"]
    # the main point's own values (P, and the variants' common 4 threads) are not repeated
    assert sorted(points) == sorted([f"p64-n{n}-t-", f"p{main_p}-n{n}-t1"])
    # cpu_sme_core_num None: each variant's own (the engine's, unless it sets one)
    assert points[f"p{main_p}-n{n}-t1"] == SweepPoint(main_p, n, thread_num=1)
    sme = sweep_points(*bench_and_variants(config_with(same_threads, cpu_sme_core_num=[1, 2])))
    assert sorted(sme) == [f"p{main_p}-n{n}-t--scn1", f"p{main_p}-n{n}-t--scn2"]
    variants = sme[f"p{main_p}-n{n}-t--scn1"].variants(same_threads["variants"])
    assert {v["runtime"]["cpu_sme_core_num"] for v in variants.values()} == {1}


def test_a_point_sets_its_lengths_and_every_variants_threads(same_threads):
    cfg = config_with(same_threads, thread_num=[2])
    (point,) = sweep_points(*bench_and_variants(cfg)).values()
    bench = replace(point, prompt_tokens=64).bench(cfg["bench"])
    assert bench["prompt_tokens"] == 64 and "sweep" not in bench
    variants = point.variants(cfg["variants"])
    assert {v["runtime"]["thread_num"] for v in variants.values()} == {2}
    assert replace(point, thread_num=None).variants(cfg["variants"]) == cfg["variants"]


def test_sweep_points_run_the_sweeps_own_repetitions_else_the_main_points(root, same_threads):
    """The sweep explains, the main point judges: `bench.sweep.repetitions` sets a point's
    blocks (a number or precision on demand) and leaves the main point's alone, in what the
    plan hands rule run_sweep (it once handed the main point's, the sweep's own ignored)."""
    main_reps = {"min": 10, "max": 30, "target_half_width": 0.03}
    cfg = config_with(same_threads, thread_num=[2], repetitions=6)
    cfg["bench"]["repetitions"] = main_reps
    plan = plan_of(copy.deepcopy(cfg), root / "tests/workflow/config-tiny.yaml", root)
    (label,) = plan.sweep
    assert plan.point_bench(SimpleNamespace(point=label))["repetitions"] == 6
    assert plan.main_bench["repetitions"] == main_reps
    check(cfg)
    (point,) = sweep_points(*bench_and_variants(cfg)).values()
    assert point.bench(cfg["bench"])["repetitions"] == 6
    assert cfg["bench"]["repetitions"] == main_reps
    del cfg["bench"]["sweep"]["repetitions"]
    assert point.bench(cfg["bench"])["repetitions"] == main_reps
    cfg["bench"]["sweep"]["repetitions"] = {"min": 8, "max": 4, "target_half_width": 0.05}
    with pytest.raises(ConfigError, match=r"bench\.sweep\.repetitions\.min"):
        check(cfg)


def test_no_sweep_no_points(base_config):
    assert sweep_points(*bench_and_variants(base_config)) == {}


def test_a_thread_sweep_of_a_pair_that_differs_in_threads_is_refused(base_config):
    with pytest.raises(ConfigError, match=r"bench.sweep.thread_num.*differs in thread_num"):
        check(config_with(base_config, thread_num=[1, 2]))
    check(config_with(base_config, prompt_tokens=[64, 128]))  # a prompt sweep is fine


def test_a_variant_without_thread_num_runs_llm_benchs_default(base_config):
    """Unset thread_num is llm_bench's default (4): a pair of unset and 4 does not differ."""
    cfg = copy.deepcopy(base_config)
    del cfg["variants"]["one-thread"]["runtime"]["thread_num"]
    cfg["variants"]["two-threads"]["runtime"]["thread_num"] = 4
    check(config_with(cfg, thread_num=[1, 2]))
    assert sorted(sweep_points(*bench_and_variants(config_with(cfg, thread_num=[1, 4])))) == [
        "p32-n8-t1"
    ]


def bench_rows(point_speeds: dict[str, tuple[float, float]], extra=None, blocks=3) -> list[dict]:
    """bench.csv-shaped rows: per point, baseline `a` and treatment `b` at the given tok/s
    (the test's own inputs), for both phases and `blocks` blocks."""
    rows = []
    for point, (a_tps, b_tps) in point_speeds.items():
        for block in range(blocks):
            for position, (variant, tps) in enumerate((("a", a_tps), ("b", b_tps))):
                for phase in ("prefill", "decode"):
                    rows.append(
                        {
                            "device": "host",
                            "model": "m",
                            "point": point,
                            "variant": variant,
                            "phase": phase,
                            "block": block,
                            "position": position if block % 2 == 0 else 1 - position,
                            "tps": tps * (1 + 0.01 * block),
                            "emulated": False,
                            "prompt_tokens": 64,
                            "generate_tokens": 8,
                            "thread_num": 1,
                            "settings_mismatch": "",
                            "timing_plausible": True,
                            "under_load": False,
                            **(extra or {}).get((point, variant, block), {}),
                        }
                    )
    return rows


def test_sweep_rows_carry_the_main_checks_and_their_own_problems_and_load():
    import pandas as pd

    from mnnrepro.analysis.sweep import main_checks, sweep_summary

    table = pd.DataFrame(
        bench_rows(
            {"p256": (10.0, 12.0), "t2": (10.0, 15.0)},
            {
                ("p256", "b", 1): {"under_load": True},
                ("t2", "a", 0): {"settings_mismatch": "thread_num: 2 ran, 1 asked"},
            },
        )
    )
    main = pd.DataFrame(bench_rows({"ignored": (10.0, 11.0)})).drop(columns=["point"])
    config = {
        "experiment": "x",
        "stats": {"ci_level": 0.95, "seed": 1, "n_boot": 100, "target_half_width": 0.02},
        "comparison": {"baseline": "a", "treatment": "b", "tolerance": 0.1, "claims": {}},
        "bench": {"repetitions": 3},
    }
    document = {
        "rows": [
            {"device": "host", "model": "m", "baseline": "a", "treatment": "b", "checks_passed": 1}
        ]
    }
    rows = sweep_summary(table, main, design_of(config), main_checks(document)).set_index(
        ["point", "phase"]
    )
    assert bool(rows.loc[("main", "prefill"), "checks_passed"])
    assert rows.loc[("p256", "decode"), "blocks_under_load"] == 1
    assert rows.loc[("main", "decode"), "blocks_under_load"] == 0
    assert not rows.loc[("t2", "prefill"), "checks_passed"]
    assert "settings that ran differ" in rows.loc[("t2", "prefill"), "problems"]
    # when the main comparison's checks failed, no point of it is valid
    document["rows"][0]["checks_passed"] = False
    failed = sweep_summary(table, main, design_of(config), main_checks(document))
    assert not failed["checks_passed"].any()
    assert failed["problems"].str.contains("main comparison's checks failed").all()
