"""Which experiment an invocation runs, and where its files are (mnnrepro.plan.experiment):
what `common.smk` decides before any rule exists, checked without Snakemake parsing a workflow."""

from __future__ import annotations

import shutil

import pytest
import yaml

from mnnrepro.config import ConfigError
from mnnrepro.plan.experiment import resolve

SHIPPED_ARCHIVE = "benchmarks/results/host-sme2-archive.tar.gz"


@pytest.fixture
def paths(root):
    return {"default_config": root / "config" / "config.yaml"}


def test_without_a_configfile_overrides_adjust_the_default_experiment(root, paths):
    default = yaml.safe_load(paths["default_config"].read_text())
    config = {"bench": {"prompt_tokens": 7}}  # what --config bench='{prompt_tokens: 7}' gives
    found = resolve(config, [str(paths["default_config"])], **paths)
    assert found.name == default["experiment"] == config["experiment"]
    assert config["bench"]["prompt_tokens"] == 7
    # the rest of bench is the default's, not dropped by the override
    assert config["bench"]["generate_tokens"] == default["bench"]["generate_tokens"]
    assert (found.results_key, found.engines_dir, found.models_dir) == (
        default["experiment"],
        "results/engines",
        "results/models",
    )
    assert found.raw_roots == ("", "") and found.explains
    assert found.measures_bandwidth == config["bandwidth"]["enabled"]


def test_a_given_configfile_replaces_the_default_and_gets_the_schemas_defaults(root, paths):
    tiny = root / "tests" / "workflow" / "config-tiny.yaml"
    config = yaml.safe_load(tiny.read_text())
    assert "correctness" not in config or "max_logit_diff_sd" not in config["correctness"]
    found = resolve(config, [str(tiny)], **paths)
    assert found.name == yaml.safe_load(tiny.read_text())["experiment"]
    assert set(config["models"]) == set(yaml.safe_load(tiny.read_text())["models"])
    assert "max_logit_diff_sd" in config["correctness"]  # filled from the schema


def test_a_key_given_twice_in_a_configfile_names_the_file_and_key(root, paths, tmp_path):
    given = tmp_path / "twice.yaml"
    given.write_text("experiment: a\nexperiment: b\n")
    with pytest.raises(ConfigError, match=r"twice\.yaml.*key `experiment` given twice"):
        resolve({"experiment": "b"}, [str(given)], **paths)


def test_a_bad_key_is_named_before_anything_runs(root, paths):
    tiny = root / "tests" / "workflow" / "config-tiny.yaml"
    config = yaml.safe_load(tiny.read_text())
    config["bench"]["prompt_tokens"] = "many"
    with pytest.raises(ConfigError, match=r"bench\.prompt_tokens"):
        resolve(config, [str(tiny)], **paths)


def test_a_replay_takes_the_archives_config_and_its_own_directories(root, paths, tmp_path):
    archive = tmp_path / "host-run.tar.gz"
    shutil.copy(root / SHIPPED_ARCHIVE, archive)
    config = {"replay": str(archive)}
    found = resolve(config, [str(paths["default_config"])], **paths)
    assert config["replay"] == str(archive) and found.replay == str(archive)
    assert found.name == config["experiment"] != "replay"
    assert found.results_key == "replay/host-run"
    assert found.engines_dir == "results/replay/host-run/engines"
    assert found.models_dir == "results/replay/host-run/models"
    assert found.raw_roots == (f"results/{found.name}/", "results/replay/host-run/")
    # this archive holds neither bandwidth records nor model layouts: nothing to explain with
    assert not found.measures_bandwidth and not found.explains


def test_a_replay_of_no_archive_names_the_setting_and_the_file(paths, tmp_path):
    bad = tmp_path / "results.tar.gz"
    bad.write_bytes(b"not an archive")
    with pytest.raises(ConfigError, match=rf"--config replay={bad}: {bad}: not a readable"):
        resolve({"replay": str(bad)}, [], **paths)


def paper_config(root) -> dict:
    """config/paper.yaml with its run-time mask overlay (config/paper-mask.yaml): every kind
    of variant the paper's experiment can run."""
    from snakemake.utils import update_config

    config = yaml.safe_load((root / "config" / "paper.yaml").read_text())
    update_config(config, yaml.safe_load((root / "config" / "paper-mask.yaml").read_text()))
    return config


def damaged(config: dict, how: str) -> dict:
    """config/paper.yaml with one damage of each class the kinds' registries can tell."""
    if how == "platform":  # the phone's android-arm64 builds, also on this host
        config["devices"]["host"] = {"local": {}}
    elif how == "duplicate":  # the phone again, under another name
        config["devices"]["x300-again"] = yaml.safe_load(yaml.safe_dump(config["devices"]["x300"]))
    elif how == "dotdot":
        config["devices"]["x300"]["adb"]["workdir"] = "/data/local/tmp/../../system/xbin"
    elif how == "word":
        config["variants"]["sme2-masked"]["env"]["MNN_CPU_TARGET"] = "two"
    return config


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("platform", r"`engines\.sme2-off\.build\.platform`: 'android-arm64', but variant "),
        ("duplicate", r"`devices\.x300-again`: the same adb device as `devices\.x300`"),
        ("dotdot", r"`devices\.x300\.adb\.workdir`: '/data/local/tmp/\.\./\.\./system/xbin'"),
        ("word", r"`variants\.sme2-masked\.env\.MNN_CPU_TARGET`: 'two' is not an integer"),
    ],
)
def test_a_config_the_kinds_cannot_run_is_refused_naming_the_key(root, paths, how, says):
    """Each class was accepted at planning time before and failed late (exec on the wrong
    CPU, two names racing on one phone, a path outside the workdir) or never (atoi("two")
    is 0: SME2 silently masked)."""
    paper = root / "config" / "paper.yaml"
    config = damaged(paper_config(root), how)
    with pytest.raises(ConfigError, match=says) as err:
        resolve(config, [str(paper)], **paths)
    # the first line names the key, after the file that gives it where one does (a key this
    # test adds is in no file)
    assert str(err.value).removeprefix(f"{paper}: ").startswith("config key `")


def test_the_undamaged_paper_config_passes_the_kind_checks(root, paths):
    paper = root / "config" / "paper.yaml"
    resolve(paper_config(root), [str(paper)], **paths)
