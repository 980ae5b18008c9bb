from collections import Counter

import pytest

from mnnrepro.runs.schedule import interleaved


def test_two_variants_alternate_and_counterbalance():
    plan = interleaved(["a", "b"], 4)
    assert [i.variant for i in plan] == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert [i.run_order for i in plan] == list(range(8))
    assert [i.block for i in plan] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_every_variant_once_per_block_and_equally_often_first():
    variants = ["a", "b", "c"]
    plan = interleaved(variants, 6)
    for block in range(6):
        assert sorted(i.variant for i in plan if i.block == block) == variants
    firsts = Counter(i.variant for i in plan if i.position == 0)
    assert firsts == {"a": 2, "b": 2, "c": 2}


@pytest.mark.parametrize(("variants", "reps"), [([], 3), (["a", "a"], 3), (["a"], 0)])
def test_rejects_bad_input(variants, reps):
    with pytest.raises(ValueError):
        interleaved(variants, reps)
