"""A job's spec read back (mnnrepro/job.py): Snakemake's named lists as values, with a rule's
names read as attributes or keys whatever they are, and the directory a spec reruns in."""

from __future__ import annotations

import pytest

from mnnrepro.job import SPEC_SUFFIX, Job, NamedList, spec_path, start, workdir_of


def written_job(**lists) -> dict:
    empty = {"items": [], "names": {}}
    log = {"items": ["logs/rule/exp/host.log"], "names": {}}
    return {
        "script": "compute_summary",
        "rule": "compute_summary",
        **{name: lists.get(name, empty) for name in ("input", "output", "params", "wildcards")},
        "log": lists.get("log", log),
        "threads": 1,
        "repository": "/repo",
    }


def test_a_name_is_read_as_an_attribute_or_a_key_whatever_it_is():
    """`index` and `count` (a sequence's methods) name items like any other name."""
    named = NamedList.of(
        {"items": ["a.json", "b.json", "c.json"], "names": {"index": [0, None], "runs": [1, 3]}}
    )
    assert named.index == "a.json" and named["index"] == "a.json"
    assert list(named.runs) == ["b.json", "c.json"] and named.runs[1] == "c.json"
    assert named[0] == "a.json" and len(named) == 3 and list(named)[-1] == "c.json"
    assert named.get("sweep") is None and not NamedList((), {})
    with pytest.raises(AttributeError):
        named.sweep  # noqa: B018


def test_a_spec_reruns_in_the_folder_its_log_is_under(tmp_path):
    """The spec's folder less its log's: a run copied elsewhere reruns where it is now."""
    job = Job.of(written_job())
    spec = tmp_path / "moved" / (str(job.log[0]) + SPEC_SUFFIX)
    assert workdir_of(spec, job) == tmp_path / "moved"
    assert spec_path(written_job()) == spec.relative_to(tmp_path / "moved")


def test_a_spec_that_is_not_json_is_refused_naming_the_rule_and_nothing_is_written(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    unwritable = written_job(params={"items": [object()], "names": {"design": [0, None]}})
    with pytest.raises(TypeError, match="rule compute_summary: its job spec is not JSON"):
        start(unwritable)
    assert not any(tmp_path.rglob("*" + SPEC_SUFFIX))
