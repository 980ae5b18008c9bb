"""The tiny experiment through `snakemake --profile profiles/slurm` on a real single-node Slurm
cluster on this machine (tests/slurm_cluster.py; Debian's slurm-wlm and munge, as root).
Skipped, saying why, where Slurm is not installed or the tests do not run as root.

The results must equal a local run's in everything but the measured numbers: the same files,
the same tables' shape and keys; builds, exports and analysis ran as Slurm jobs (their
comments name the rule, as the executor plugin sets them), device rules on the controller."""

from __future__ import annotations

import os
import subprocess

import pandas as pd
import pytest
import slurm_cluster
import yaml
from conftest import run_snakemake

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]

SUBMITTED = {
    "make_synthetic_model",
    "export_mnn_model",
    "describe_model_layout",
    "collect_bench_table",
    "compute_summary",
    "check_validity",
    "plot",
    "write_summary_report",
}
LOCAL = {"collect_device_facts", "run_greedy", "run_bench", "measure_bandwidth"}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    why = slurm_cluster.missing()
    if why:
        pytest.skip(f"no Slurm cluster here: {why}")
    state = tmp_path_factory.mktemp("slurm-cluster")
    env = slurm_cluster.start(state)
    yield {**os.environ, **env}
    slurm_cluster.stop(state)


def result_files(workdir) -> set[str]:
    out = workdir / "results"
    return {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}


def test_slurm_runs_builds_exports_and_analysis_as_jobs_with_a_local_runs_results(
    root, slurm, seed_models, tmp_path
):
    cfg = yaml.safe_load((root / "tests/workflow/config-tiny.yaml").read_text())
    cfg["attribution"] = {"enabled": False}  # profiling is tests/workflow/test_workflow.py's
    cfg["bench"]["repetitions"] = 2
    config_path = tmp_path / "tiny.yaml"
    config_path.write_text(yaml.safe_dump(cfg))
    common = ("--configfile", str(config_path))
    run_snakemake(
        root,
        "--profile",
        "profiles/slurm",
        "--directory",
        str(tmp_path / "slurm"),
        *common,
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--seconds-between-status-checks",
        "2",
        "--cores",
        "2",
        "--local-cores",
        "2",
        env=slurm,
    )
    # the local run, compared file by file, starts from the same model, made apart
    seed_models(tmp_path / "local", cfg["models"])
    run_snakemake(root, "--cores", "2", "--directory", str(tmp_path / "local"), *common)

    jobs = subprocess.run(
        ["squeue", "-t", "all", "-h", "-o", "%k|%T"],
        env=slurm,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    rules = {line.split("|")[0].removeprefix("rule_").split("_wildcards_")[0] for line in jobs}
    assert rules >= SUBMITTED, f"not submitted: {SUBMITTED - rules}"
    assert not LOCAL & rules, f"device rules went to the cluster: {LOCAL & rules}"
    assert {line.split("|")[1] for line in jobs} == {"COMPLETED"}

    assert result_files(tmp_path / "slurm") == result_files(tmp_path / "local")
    for table, keys in (
        ("bench.csv", ["device", "model", "variant", "phase", "block"]),
        ("summary.csv", ["device", "model", "baseline", "treatment", "phase"]),
    ):
        a, b = (
            pd.read_csv(tmp_path / run / "results" / "tiny" / table) for run in ("slurm", "local")
        )
        assert list(a.columns) == list(b.columns)
        keyed = [k for k in keys if k in a.columns]
        assert (
            a[keyed]
            .sort_values(keyed)
            .reset_index(drop=True)
            .equals(b[keyed].sort_values(keyed).reset_index(drop=True))
        )
