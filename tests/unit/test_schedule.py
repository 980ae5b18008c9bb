from collections import Counter
from itertools import combinations

import pytest

from mnnrepro.runs.schedule import interleaved, order_balance, williams_rows


def test_two_variants_alternate_and_counterbalance():
    plan = interleaved(["a", "b"], 4)
    assert [i.variant for i in plan] == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert [i.run_order for i in plan] == list(range(8))
    assert [i.block for i in plan] == [0, 0, 1, 1, 2, 2, 3, 3]


def positions_of(plan) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for inv in plan:
        out.setdefault(inv.block, {})[inv.variant] = inv.position
    return out


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7])
def test_every_pair_runs_each_way_equally_often_for_any_number_of_variants(k):
    """paper.yaml compares 5 variants (with the A/A twin): with a cyclic rotation the baseline
    ran before its twin in 8 of 10 blocks. Every even-length schedule is balanced for every
    pair; an odd one is off by one block at most."""
    variants = [f"v{i}" for i in range(k)]
    for reps in range(1, 2 * k + 3):
        positions = positions_of(interleaved(variants, reps))
        for first, second in combinations(variants, 2):
            balance = order_balance(positions, first, second)
            assert balance["blocks"] == reps
            gap = abs(balance["first_before"] - balance["second_before"])
            assert gap == (reps % 2), (k, reps, first, second, balance)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_over_a_cycle_every_variant_holds_every_position_equally_often(k):
    variants = [f"v{i}" for i in range(k)]
    cycle = len(williams_rows(k))
    assert cycle == (k if k % 2 == 0 else 2 * k)
    plan = interleaved(variants, cycle)
    for block in range(cycle):
        assert sorted(i.variant for i in plan if i.block == block) == variants
    per_position = Counter((i.variant, i.position) for i in plan)
    assert set(per_position.values()) == {cycle // k}
    assert len(per_position) == k * k


@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_every_variant_follows_every_other_equally_often_over_a_cycle(k):
    """First-order carry-over: the Williams property (each ordered pair adjacent equally often)."""
    variants = [f"v{i}" for i in range(k)]
    rows = williams_rows(k)
    adjacent = Counter((row[i], row[i + 1]) for row in rows for i in range(k - 1))
    assert len(adjacent) == k * (k - 1)
    assert len(set(adjacent.values())) == 1
    assert len(interleaved(variants, 1)) == k


def test_order_balance_counts_only_blocks_holding_both():
    positions = {0: {"a": 0, "b": 1}, 1: {"b": 0, "a": 1}, 2: {"a": 0}, 3: {"a": 1, "b": 0}}
    assert order_balance(positions, "a", "b") == {
        "first_before": 1,
        "second_before": 2,
        "blocks": 3,
    }


@pytest.mark.parametrize(("variants", "reps"), [([], 3), (["a", "a"], 3), (["a"], 0)])
def test_rejects_bad_input(variants, reps):
    with pytest.raises(ValueError):
        interleaved(variants, reps)


def test_the_summary_counts_who_ran_first_per_pair_from_the_recorded_positions():
    """summary.csv's baseline_first_blocks / treatment_first_blocks come from the positions the
    invocations recorded (here the schedule's own, for 3 variants over 5 blocks), not from a
    formula of the schedule."""
    import pandas as pd

    from mnnrepro.analysis.summary import order_counts

    plan = interleaved(["off", "on", "again"], 5)
    rows = pd.DataFrame(
        [{"block": i.block, "variant": i.variant, "position": i.position} for i in plan]
    )
    expected_off_first = sum(
        1
        for block in range(5)
        if rows.query(f"block == {block} and variant == 'off'")["position"].iloc[0]
        < rows.query(f"block == {block} and variant == 'on'")["position"].iloc[0]
    )
    counts = order_counts(rows, ("off", "on"))
    assert counts == {
        "baseline_first_blocks": expected_off_first,
        "treatment_first_blocks": 5 - expected_off_first,
    }
    assert abs(counts["baseline_first_blocks"] - counts["treatment_first_blocks"]) == 1
    # a run whose recorded positions are all one way round is counted as it ran
    one_way = rows.assign(position=rows["variant"].map({"off": 0, "on": 1, "again": 2}))
    assert order_counts(one_way, ("off", "on")) == {
        "baseline_first_blocks": 5,
        "treatment_first_blocks": 0,
    }
    assert order_counts(rows.drop(columns="position"), ("off", "on"))["baseline_first_blocks"] == 0
