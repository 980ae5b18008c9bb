"""`bench.sweep`: which points run, what each point measures, and the config checks."""

from __future__ import annotations

import copy

import pytest
import yaml

from mnnrepro.config import ConfigError, check, point_bench, point_variants, sweep_points


@pytest.fixture
def base_config(root):
    """The tiny test experiment: its pair differs in thread_num (one vs two threads)."""
    return yaml.safe_load((root / "tests/workflow/config-tiny.yaml").read_text())


def config_with(base_config, **sweep):
    cfg = copy.deepcopy(base_config)
    cfg["bench"]["sweep"] = sweep
    return cfg


@pytest.fixture
def same_threads(base_config):
    cfg = copy.deepcopy(base_config)
    for variant in cfg["variants"].values():
        variant.setdefault("runtime", {})["thread_num"] = 4
    return cfg


def test_each_dimension_is_varied_around_the_main_point(same_threads):
    main_p = same_threads["bench"]["prompt_tokens"]
    cfg = config_with(same_threads, prompt_tokens=[64, main_p], thread_num=[1, 4])
    points = sweep_points(cfg)
    n = cfg["bench"]["generate_tokens"]
    # the main point's own values (P, and the variants' common 4 threads) are not repeated
    assert sorted(points) == sorted([f"p64-n{n}-t-", f"p{main_p}-n{n}-t1"])
    assert points[f"p{main_p}-n{n}-t1"] == {
        "prompt_tokens": main_p,
        "generate_tokens": n,
        "thread_num": 1,
    }


def test_a_point_sets_its_lengths_and_every_variants_threads(same_threads):
    cfg = config_with(same_threads, thread_num=[2])
    (point,) = sweep_points(cfg).values()
    bench = point_bench(cfg["bench"], {**point, "prompt_tokens": 64})
    assert bench["prompt_tokens"] == 64 and "sweep" not in bench
    variants = point_variants(cfg["variants"], point)
    assert {v["runtime"]["thread_num"] for v in variants.values()} == {2}
    assert point_variants(cfg["variants"], {**point, "thread_num": None}) == cfg["variants"]


def test_no_sweep_no_points(base_config):
    assert sweep_points(base_config) == {}


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
    assert sorted(sweep_points(config_with(cfg, thread_num=[1, 4]))) == ["p32-n8-t1"]
