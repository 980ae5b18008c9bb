"""A sweep, end to end on the tiny synthetic model: every point, the bandwidth probe and the
ceiling, the archive and its replay."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import (
    assert_png,
    assert_vega_html,
    copy_repository,
    run_snakemake,
    without_replay_section,
)

pytestmark = [pytest.mark.slow]

SWEEP = "tests/workflow/config-sweep.yaml"


def test_a_sweep_runs_every_point_and_explains_the_gain(root, seed_models, tmp_path):
    """config-sweep.yaml: the tiny synthetic model, P in {64, 256} and threads in {1, 2}:
    around the main point (P 64, 1 thread) that is two more comparisons, each its own; the
    bandwidth probe, the ceiling and the sweep's plot and tables reach the report. (It used
    to run on the quickstart's Qwen3-0.6B model, which chained it behind the quickstart: the
    sweep's code does not depend on the model's size.)"""
    repo = copy_repository(root, tmp_path / "repo")
    seed_models(repo, yaml.safe_load((root / SWEEP).read_text())["models"])
    run_snakemake(repo, "--cores", "2", "--configfile", SWEEP)
    out = repo / "results" / "sweep"
    summary = pd.read_csv(out / "sweep" / "summary.csv")
    assert sorted(set(summary["point"])) == ["main", "p256-n8-t-", "p64-n8-t2"]
    keyed = summary.set_index(["point", "phase"])
    assert keyed.loc[("p64-n8-t2", "decode"), "thread_num"] == 2
    assert keyed.loc[("p256-n8-t-", "prefill"), "prompt_tokens"] == 256
    assert keyed.loc[("main", "prefill"), "thread_num"] == 1
    assert (summary["n_pairs"] == 2).all()  # every point ran its own interleaved blocks
    raw = out / "sweep" / "raw" / "host" / "synth-tiny"
    assert sorted(p.name for p in raw.iterdir()) == ["p256-n8-t-", "p64-n8-t2"]
    sweep_bench = pd.read_csv(out / "sweep" / "bench.csv")
    assert set(sweep_bench[sweep_bench["point"] == "p64-n8-t2"]["thread_num"]) == {2}
    assert_png(out / "plots" / "sweep.png")
    assert_vega_html(out / "plots" / "sweep.html", "point", "phase")
    bandwidth = json.loads((out / "bandwidth" / "host.json").read_text())
    # at the variants' 1 thread and on both cores
    assert [m["threads"] for m in bandwidth["measurements"]] == [1, 2]
    for measured in bandwidth["measurements"]:
        assert len(measured["samples"]) == 5
        assert all(s["gb_per_s"] > 0 for s in measured["samples"])
    mechanism = pd.read_csv(out / "mechanism.csv")
    assert (mechanism["bandwidth_threads"] == 1).all()
    assert (mechanism["decode_ceiling_share"] > 0).all()
    assert (mechanism["decode_bytes_per_token"] > 0).all()
    report = (out / "summary.md").read_text()
    for section in ("## Explaining the gain", "### Sweep", "### Energy per token"):
        assert section in report
    assert "prefill gain > decode gain" in report and "decode near its ceiling" in report
    again = run_snakemake(repo, "--cores", "2", "--configfile", SWEEP)
    assert "Nothing to be done" in again.stdout + again.stderr

    # the archive holds the sweep's and the ceiling's records: a replay derives the same tables
    run_snakemake(repo, "archive", "--cores", "2", "--configfile", SWEEP)
    replay_dir = tmp_path / "replay"
    replay_dir.mkdir()
    archive = out / "sweep-archive.tar.gz"
    run_snakemake(
        repo, "--cores", "1", "--directory", str(replay_dir), "--config", f"replay={archive}"
    )
    replayed = replay_dir / "results" / "replay" / "sweep-archive"
    for name in ("sweep/summary.csv", "mechanism.csv"):
        assert (replayed / name).read_text() == (out / name).read_text(), name
    assert without_replay_section(replayed) == (out / "summary.md").read_text()
