"""What each engine kind's benchmark timers hold (engines/timers.py): every kind states it in
the one vocabulary, docs/verdicts.md shows exactly those statements, and speeds are grouped as
like for like only where both timers hold the same steps."""

from __future__ import annotations

import re

import pytest

from mnnrepro.engines.registry import KINDS
from mnnrepro.engines.timers import STEPS, Timers, like_for_like, timers_table


def declared() -> dict[str, Timers]:
    return {kind.kind: kind.timers for kind in KINDS}


def test_every_kind_states_what_its_timers_hold():
    missing = [name for name, timers in declared().items() if timers is None]
    assert missing == []


def test_the_docs_table_is_the_kinds_statements(root):
    text = (root / "docs" / "verdicts.md").read_text()
    shown = re.search(r"<!-- timers -->\n(.*?)\n<!-- /timers -->", text, re.S)
    assert shown is not None, "docs/verdicts.md has no timers table"
    assert shown.group(1).splitlines() == timers_table(declared())


def test_a_step_outside_the_vocabulary_is_refused_naming_it():
    with pytest.raises(ValueError, match="unknown timer steps \\['tokenising'\\]"):
        Timers(prefill=("forward", "tokenising"), decode=("forward",), source="x")


def test_what_a_timer_holds_beyond_the_definition_and_what_it_leaves_out():
    runner = Timers(("embedding", "forward", "greedy pick"), ("forward", "detokenising"), "x")
    assert runner.beyond_definition("prefill") == ["greedy pick"]
    assert runner.beyond_definition("decode") == ["detokenising", "without embedding"]
    assert set(STEPS) >= {"embedding", "forward", "greedy pick", "detokenising"}


def test_speeds_are_like_for_like_only_with_the_same_steps_in_both_timers():
    same = Timers(("embedding", "forward"), ("embedding", "forward"), "a")
    also = Timers(("embedding", "forward"), ("embedding", "forward"), "b")
    other_decode = Timers(("embedding", "forward"), ("forward",), "c")
    groups = like_for_like({"a": same, "b": also, "c": other_decode})
    assert groups == [["a", "b"], ["c"]]


def test_the_summary_names_which_engines_speeds_compare_only_when_they_differ():
    """summary.md's side by side (analysis/side_by_side.py): a line grouping the engines
    whose timers hold the same steps, where the pairs run more than one such group."""
    from types import SimpleNamespace

    import pandas as pd

    from mnnrepro.analysis.side_by_side import like_for_like_lines

    kinds = {kind.kind: kind for kind in KINDS}
    engines = {
        "mnn": SimpleNamespace(kind=kinds["prebuilt"]),
        "ort": SimpleNamespace(kind=kinds["ort-genai"]),
        "llama": SimpleNamespace(kind=kinds["llamacpp"]),
    }
    variant_engines = {"a": "mnn", "b": "mnn", "c": "ort", "d": "ort", "e": "llama"}
    both = pd.DataFrame({"baseline": ["a", "c"], "treatment": ["b", "d"]})
    assert like_for_like_lines(both, engines, variant_engines) == []  # one group: mnn, ort
    three = pd.DataFrame({"baseline": ["a", "c", "e"], "treatment": ["b", "d", "a-aa"]})
    (line,) = [line for line in like_for_like_lines(three, engines, variant_engines) if line]
    assert "llama; mnn, ort." in line
