"""The workflow used from another workflow as a Snakemake `module` (`use rule * from`), as the
workflow catalog shows it: the tiny experiment really runs that way, from the including
workflow's directory, and writes the same results a direct run does."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from conftest import run_snakemake

pytestmark = [pytest.mark.slow]

TINY = "tests/workflow/config-tiny.yaml"


def test_the_tiny_experiment_runs_as_a_module_of_another_workflow(root, seed_models, tmp_path):
    """Paths come from the rule files' own location, not from the including workflow's
    directory (scripts, envs, the package, the schema, the prompt image)."""
    cfg = yaml.safe_load((root / TINY).read_text())
    # the same rules on a text model, 2 blocks, no profiles: what a module changes is where
    # the workflow's files are found, not what the rules compute
    cfg["models"] = {"synth-tiny": {"synthetic": {"shape": "tiny", "seed": 0}}}
    cfg["bench"]["repetitions"] = 2
    cfg["attribution"] = {"enabled": False}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    seed_models(tmp_path, cfg["models"])
    (tmp_path / "Snakefile").write_text(
        'configfile: "tiny.yaml"\n\n\n'
        f'module repro:\n    snakefile:\n        "{root / "Snakefile"}"\n'
        "    config:\n        config\n\n\n"
        "use rule * from repro as repro_*\n\n\n"
        "rule everything:\n    default_target: True\n    input:\n        rules.repro_all.input,\n"
    )
    proc = run_snakemake(tmp_path, "-s", tmp_path / "Snakefile", "--cores", "2")
    log = proc.stdout + proc.stderr
    assert "repro_run_bench" in log and "repro_compute_summary" in log  # the module's rules
    out = tmp_path / "results" / "tiny"
    bench = pd.read_csv(out / "bench.csv")
    assert (bench.groupby(["variant", "phase"]).size() == 2).all() and len(bench) == 8
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["phase"]) == ["decode", "prefill"]
    assert set(summary["verdict"]) == {"no claim"}
    assert "correctness gate" in (out / "summary.md").read_text()
