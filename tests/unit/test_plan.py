"""The experiment's plan (mnnrepro.plan.plan), built as common.smk builds it, asked as the rules
ask it: names, kinds and paths without Snakemake parsing a workflow."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from mnnrepro.plan.plan import Plan
from mnnrepro.plan.plan import plan_of as plan_for


def plan_of(root, rel: str, **override) -> Plan:
    path = root / rel
    return plan_for({**yaml.safe_load(path.read_text()), **override}, path, root)


def test_the_plan_holds_the_experiment_once_and_copies_none_of_its_fields(root):
    """Each fact has one name: the rules read PLAN.experiment.<field>, never a copy on the
    plan that could say something else (a live run's and a replay's plans alike)."""
    from dataclasses import fields

    from mnnrepro.plan.experiment import Experiment

    names = {f.name for f in fields(Experiment)} | {"raw_roots"}
    for plan in (
        plan_of(root, "tests/workflow/config-tiny.yaml"),
        plan_of(root, "config/paper.yaml"),
    ):
        assert isinstance(plan.experiment, Experiment)
        copied = sorted(names & set(dir(plan)))
        assert not copied, f"Plan copies Experiment's {copied}: read plan.experiment instead"


def test_the_tiny_plan_names_every_output_once_and_its_kernels(root):
    plan = plan_of(root, "tests/workflow/config-tiny.yaml")
    final = plan.final_output()
    assert len(final) == len(set(final))
    assert f"results/{plan.experiment.results_key}/kernels.csv" in final  # attribution is on there
    assert f"results/{plan.experiment.results_key}/plots/kernels.png" in final
    wildcards = SimpleNamespace(
        experiment=plan.experiment.results_key, device="host", model="synth-tiny"
    )
    assert plan.profile_index(wildcards) == [
        f"results/{plan.experiment.results_key}/profiles/host/synth-tiny.json"
    ]
    assert plan.userland(wildcards) == []  # the host needs no emulated userland


def test_attribution_profiles_the_devices_it_names_and_only_those(root):
    plan = plan_of(root, "config/emulated-sme2.yaml")
    assert plan.profiled_devices == plan.devices  # absent: every device
    plan = plan_of(
        root, "config/emulated-sme2.yaml", attribution={"enabled": True, "devices": ["qemu-no-sme"]}
    )
    assert plan.profiled_devices == ["qemu-no-sme"]
    assert plan.profile_indexes() == [
        f"results/{plan.experiment.results_key}/profiles/qemu-no-sme/{model}.json"
        for model in plan.models
    ]
    unprofiled = SimpleNamespace(
        experiment=plan.experiment.results_key, device="host", model=plan.models[0]
    )
    assert plan.profile_index(unprofiled) == []  # its validity has no execution checks


def test_emulated_devices_fetch_the_userland_and_never_enter_a_sweep(root):
    plan = plan_of(root, "config/emulated-sme2.yaml")
    emulated = [d for d in plan.devices if plan.device_kinds[d].emulated]
    assert emulated and "host" not in emulated
    wildcards = SimpleNamespace(
        experiment=plan.experiment.results_key, device=emulated[0], model="m"
    )
    assert plan.userland(wildcards) == ["resources/emulation/userland.json"]
    assert plan.probed_engines(wildcards) == []  # its memory is the host's


@pytest.mark.parametrize("rel", ["config/paper.yaml", "config/config.yaml"])
def test_every_engine_has_one_key_and_record(root, rel):
    plan = plan_of(root, rel)
    assert sorted(plan.engine_of_key.values()) == plan.engines
    for engine in plan.engines:
        record = plan.engine_record(engine)
        assert record.startswith(f"{plan.experiment.engines_dir}/{plan.engine_keys[engine]}/")


def test_bisection_refuses_what_it_cannot_walk_naming_the_key():
    from mnnrepro.config import ConfigError
    from mnnrepro.plan.bisect import repository, source_of

    config = {
        "mnn": {"source": {"archive": "https://example.invalid/mnn.tgz", "sha256": "0" * 64}},
        "engines": {
            "wheel": {"prebuilt": {"pypi": "mnn==3.6.1"}},
            "built": {"build": {"platform": "host"}},
            "own": {"build": {"platform": "host", "source": {"path": "../MNN"}}},
        },
    }
    with pytest.raises(ConfigError, match="--engine 'wheel': a prebuilt engine is not built"):
        source_of(config, "wheel")
    with pytest.raises(ConfigError, match="--engine 'nope': not an engine"):
        source_of(config, "nope")
    where = source_of(config, "built")
    with pytest.raises(ConfigError, match=r"config key `mnn.source`: bisection walks a git"):
        repository(config, where)
    assert source_of(config, "own") == ("engines", "own", "build", "source")
    assert repository(config, source_of(config, "own")).endswith("/MNN")  # a checkout's history


@pytest.mark.slow
def test_engines_of_other_releases_bring_their_own_source_kleidiai_and_patch(root):
    """config/mnn-vector-length.yaml, with one more engine of another release (whose CMake
    checks another KleidiAI): each tree fetched once, the patched copy its own, the other
    release's KleidiAI pin its own."""
    cfg = yaml.safe_load((root / "config/mnn-vector-length.yaml").read_text())
    older = {"git": "https://github.com/alibaba/MNN.git", "commit": "6b1db4c2" * 5}
    kleidiai_1_14 = {"version": "v1.14.0", "url": "file:///k.tar.gz", "md5": "4" * 32}
    build = {**cfg["engines"]["mnn-361"]["build"], "source": older, "kleidiai": kleidiai_1_14}
    engines = {**cfg["engines"], "mnn-341": {"build": build}}
    variants = {**cfg["variants"], "mnn-341": {"engine": "mnn-341"}}
    plan = plan_of(root, "config/mnn-vector-length.yaml", engines=engines, variants=variants)
    receipts = plan.sources.engine_receipts
    assert len(set(receipts.values())) == len(plan.engines) == 4
    assert len(set(plan.engine_keys.values())) == 4
    trees = {e: plan.sources.trees[("mnn", receipts[e].split("/")[2])] for e in plan.engines}
    assert {e: tree["kleidiai"]["version"] for e, tree in trees.items()} == {
        "mnn-341": "v1.14.0",
        "mnn-361": "v1.16.0",
        "mnn-361-patched": "v1.16.0",
        "mnn-master": "v1.16.0",
    }
    assert {k: trees["mnn-341"]["source"][k] for k in older} == older  # defaults added
    assert trees["mnn-361-patched"]["source"] == trees["mnn-361"]["source"]
    assert [p["path"] for p in trees["mnn-361-patched"]["patches"]] == [
        "patches/mnn-sme2-vector-length.patch"
    ]


def test_every_shipped_patch_is_the_file_its_config_pins(root):
    import hashlib

    pinned = [
        patch
        for path in sorted((root / "config").glob("*.yaml"))
        for spec in (yaml.safe_load(path.read_text()).get("engines") or {}).values()
        for patch in (spec.get("build") or {}).get("patches", [])
    ]
    assert pinned  # config/mnn-vector-length.yaml ships the vector-length fix
    for patch in pinned:
        digest = hashlib.sha256((root / patch["path"]).read_bytes()).hexdigest()
        assert digest == patch["sha256"], patch["path"]


def test_every_engine_build_waits_for_the_phones_readiness_and_only_theirs(root):
    """A phone not ready is refused as its facts are collected: every build of an experiment
    with a phone takes those facts as input (ancient: collected again, they rebuild nothing);
    one without a phone waits for nothing."""
    paper = plan_of(root, "config/paper.yaml")
    waits = paper.phones_ready()
    assert [str(f) for f in waits] == ["results/paper-x300/devices/x300.json"]
    assert all(getattr(f, "flags", {}).get("ancient") for f in waits)
    assert plan_of(root, "config/emulated-sme2.yaml").phones_ready() == []
