"""The experiment one workflow invocation runs: its config (the one given, the default, or a
replayed archive's) checked and completed, and where its files are.

The workflow's `common.smk` calls `resolve` once, before any rule is defined; everything it
decides is here, so it is tested without Snakemake parsing a workflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mnnrepro.archive.replay import archived_config, archived_names, replay_name
from mnnrepro.config import ConfigError, check_config_files, load_yaml, naming_its_file
from mnnrepro.plan.checks import check

# Settings an archive's workflow may predate, with what it did before they existed: a replay
# derives the archive's tables by the archive's own method, where today's default differs.
PREDATED_SETTINGS = {
    ("stats", "dependence"): "assume-independent",  # no interval was widened for dependence
}


def with_predated_settings(config: dict) -> dict:
    """An archived resolved config with PREDATED_SETTINGS where it does not name them."""
    for (section, key), before in PREDATED_SETTINGS.items():
        if isinstance(config.get(section), dict):
            config[section].setdefault(key, before)
    return config


@dataclass(frozen=True)
class Experiment:
    """Where one experiment's files are, and which of its optional parts exist."""

    name: str  # config key `experiment`
    replay: str  # the archive replayed ("" for a live run)
    results_key: str  # results/<results_key>/: the {experiment} wildcard of every rule path
    engines_dir: str  # engine records (a replay restores its archive's)
    models_dir: str  # model manifests and layouts (likewise)
    measures_bandwidth: bool  # bandwidth records exist (measured, or in the archive)
    explains: bool  # the mechanism analysis runs (its inputs exist)
    runs_engine_tests: bool  # the engines' own tests run (or the archive holds their records)

    @property
    def raw_roots(self) -> tuple[str, str]:
        """A replay's run indexes name the archived raw paths: (archived prefix, restored
        prefix); a live run's are where they are."""
        if not self.replay:
            return ("", "")
        return (f"results/{self.name}/", f"results/{self.results_key}/")


def _with_default(config: dict, configfiles, default_config: Path) -> None:
    """Without --configfile, --config overrides adjust the default experiment (which
    replace-workflow-config, or a cluster job's command line, would otherwise have dropped)."""
    given = [f for f in configfiles if Path(f).resolve() != default_config.resolve()]
    if given or "replay" in config:
        return
    from snakemake.utils import update_config  # merges --config as Snakemake itself does

    overrides = dict(config)
    config.clear()
    config.update(load_yaml(default_config.read_text(encoding="utf-8"), str(default_config)))
    update_config(config, overrides)


def resolve(config: dict, configfiles, default_config: Path) -> Experiment:
    """Complete and check `config` in place (Snakemake's global config, which the rules read):
    one pass of the schema (config.schema.yaml) checks it and fills its defaults; then say
    where the experiment's files are. A bad config, or a replay of a damaged archive, is a
    ConfigError naming the key, file or archive."""
    _with_default(config, configfiles, default_config)
    check_config_files(configfiles)  # a key given twice is an error, not the last one
    replay = config.get("replay", "")
    if "experiment" in config or not replay:  # a live run (a replay brings its own config)
        try:
            check(config, fill_defaults=True)
        except ConfigError as err:
            raise naming_its_file(err, configfiles) from None
    if not replay:
        return Experiment(
            name=config["experiment"],
            replay="",
            results_key=config["experiment"],
            engines_dir="results/engines",
            models_dir="results/models",
            measures_bandwidth=config["bandwidth"]["enabled"],
            explains=True,
            runs_engine_tests=config["engine_tests"]["enabled"],
        )
    try:  # the archived resolved config replaces this one, checked as a live one is
        archived = with_predated_settings(archived_config(replay))
        check(archived, local_paths=False, fill_defaults=True)  # a replay builds nothing
        names = archived_names(replay)
    except (ConfigError, ValueError, OSError) as err:
        raise ConfigError(f"--config replay={replay}: {err}") from None
    config.clear()
    config.update({**archived, "replay": replay})
    name, key = config["experiment"], f"replay/{replay_name(replay)}"
    return Experiment(
        name=name,
        replay=replay,
        results_key=key,
        engines_dir=f"results/{key}/engines",
        models_dir=f"results/{key}/models",
        # what explains the gain is re-derived where the archive holds its records
        measures_bandwidth=any(n.startswith(f"results/{name}/bandwidth/") for n in names),
        explains=all(f"results/models/{m}/layout.json" in names for m in config["models"]),
        runs_engine_tests=any(n.startswith(f"results/{name}/engine_tests/") for n in names),
    )
