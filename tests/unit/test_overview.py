"""The plan a dry run prints before its job list (mnnrepro.plan.overview): what it measures
and for how long, from the config and from an earlier run's own records."""

from __future__ import annotations

import re
import tarfile
from dataclasses import replace

import pytest
import yaml
from conftest import full_bench

from mnnrepro.devices.kinds import DEVICE_KINDS
from mnnrepro.plan.overview import overview
from mnnrepro.plan.plan import plan_of


def lines_of(root, config: dict, name: str, tmp_path) -> list[str]:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return overview(plan_of(config, path, root))


def test_the_paper_dry_run_says_what_it_asks_of_the_phone_and_docs_say_the_same(
    root, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # no earlier run here
    config = yaml.safe_load((root / "config/paper.yaml").read_text())
    lines = lines_of(root, config, "paper.yaml", tmp_path)
    reps = config["bench"]["repetitions"]
    per_block = 3  # sme2-off, sme2-on and the A/A twin
    assert (
        f"  per device: {per_block} invocations per block, {reps['min']} to {reps['max']} blocks "
        f"(until every judged row's verdict is settled, or {reps['budget_s'] / 60:.0f} min of "
        "device time)"
    ) in lines
    (phone,) = [x for x in lines if x.startswith("  device `x300`")]
    # blocks x invocations x the phone's assumed seconds (no cool-down); the worst case is the
    # last look the budget affords (a look that would pass it is not started)
    per = DEVICE_KINDS["adb"].assumed_invocation_s + config["bench"]["cooldown_s"]
    fewest = reps["min"] * per_block * per / 60
    last = max(n for n in range(reps["min"], reps["max"] + 1) if n * per_block * per <= 2700)
    assert reps["budget_s"] == 2700 and last == 21  # at 126 s a block
    assert f"{fewest:.0f} min to {last * per_block * per / 60:.0f} min of benchmarks" in phone
    assert "expected " in phone and "simulated with the gains as claimed at 3 % noise" in phone
    # what the device runs besides: the gate (2 variants x 3 prompts) and 2 x 2 profiled
    assert "on top, 6 gate and 4 profiled invocations, about 7 min" in phone
    docs = (root / "docs/evaluation.md").read_text()
    shown = re.search(r"<!-- paper-phone-time -->\n```\n(.*)\n```", docs).group(1)
    assert shown == phone  # one figure, printed by the dry run, quoted by the docs
    assert any("network, where not fetched yet:" in x and "ModelScope" in x for x in lines)


def test_a_variant_more_or_a_longer_sweep_changes_the_plan(root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((root / "config/config.yaml").read_text())
    before = lines_of(root, config, "a.yaml", tmp_path)
    config["variants"]["three-threads"] = {
        **config["variants"]["two-threads"],
        "runtime": {"thread_num": 3},
    }
    after = lines_of(root, config, "b.yaml", tmp_path)
    blocks = (
        "6 to 10 blocks (until every judged row's verdict is settled, judged after blocks 6, 10)"
    )
    assert f"  per device: 2 invocations per block, {blocks}" in before
    assert f"  per device: 3 invocations per block, {blocks}" in after
    assert "three-threads (mnn-pypi)" in after[2]


@pytest.mark.slow
def test_the_device_time_comes_from_an_earlier_run_of_the_experiment(root, tmp_path, monkeypatch):
    """The shipped archive's bench.csv as this experiment's earlier run: its invocations'
    wall times and gate waits, plus the cool-down, price the next run (its records predate
    each invocation's own device time, `device_s`, which a newer run's price is)."""
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((root / "config/host-sme2.yaml").read_text())
    # the config's local checkout: an empty directory of this test's own (a `../MNN` beside
    # tmp_path would be another test's, on the same worker)
    (tmp_path / "MNN").mkdir()
    config["mnn"]["source"]["path"] = str(tmp_path / "MNN")
    (line,) = [x for x in lines_of(root, config, "h.yaml", tmp_path) if "device `host`" in x]
    assert line.endswith("not estimated (no earlier run of this experiment on it)")
    (tmp_path / "results/host-sme2").mkdir(parents=True)
    with tarfile.open(root / "benchmarks/results/host-sme2-archive.tar.gz") as tar:
        data = tar.extractfile("results/host-sme2/bench.csv").read()
    (tmp_path / "results/host-sme2/bench.csv").write_bytes(data)
    bench = pd.read_csv(tmp_path / "results/host-sme2/bench.csv")
    runs = bench.drop_duplicates(["model", "variant", "block"])
    waits = runs[[c for c in ("quiet_wait_s", "thermal_wait_s") if c in runs]].fillna(0)
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(config))
    plan = plan_of(config, tmp_path / "h.yaml", root)
    per = (runs["wall_s"] + waits.sum(axis=1)).mean() + plan.config["bench"]["cooldown_s"]
    (line,) = [x for x in overview(plan) if "device `host`" in x]
    assert f"earlier invocations there, {per:.0f} s each" in line
    bench["device_s"] = 3600.0  # a newer run's records: each invocation's own device time
    bench.to_csv(tmp_path / "results/host-sme2/bench.csv", index=False)
    (line,) = [x for x in overview(plan) if "device `host`" in x]
    assert "earlier invocations there, 3600 s each" in line


@pytest.mark.slow
def test_another_experiment_on_the_device_is_priced_from_its_speed_and_the_models_layout(
    root, quickstart_repo, tmp_path, monkeypatch
):
    """The quickstart's real run on this host (its bench.csv and its model's layout.json) prices
    a new experiment of the same model there, which has no run of its own: the seconds are the
    model's arithmetic at the rates the quickstart's invocations recorded (recomputed here from
    its bench.csv with pandas: medians of each invocation's prefill, decode and load rates and
    of the rest of its wall time; no timing is compared, the machine may be busy); a longer
    prompt adds (warm-ups + 1) x its prefill time at the measured rate. Without the model's
    layout there is no estimate."""
    import shutil

    import pandas as pd

    from mnnrepro.plan.invocation_time import device_speed, invocation_s, layout_of

    monkeypatch.chdir(quickstart_repo)
    config = yaml.safe_load((quickstart_repo / "config/config.yaml").read_text())
    config["experiment"] = "another"
    lines = lines_of(root, config, "another.yaml", tmp_path)
    (line,) = [x for x in lines if x.startswith("  device `host`")]
    assert "estimated from this model's layout and the device's speed in quickstart" in line
    priced = float(re.search(r"source: ([\d.e+-]+) s per invocation estimated", line).group(1))
    bench = pd.read_csv(quickstart_repo / "results/quickstart/bench.csv")
    (model,) = config["models"]
    layout = layout_of(model, quickstart_repo)
    settings = config["bench"]
    expected = []
    for _threads, rows in bench[bench["phase"].isin(["prefill", "decode"])].groupby("thread_num"):
        runs = rows.pivot_table(index="raw_file", columns="phase", values="seconds")
        first = rows.drop_duplicates("raw_file").set_index("raw_file").loc[runs.index]
        prefill = settings["prompt_tokens"] * layout["prefill_ops_per_token"] / runs["prefill"]
        decode = settings["generate_tokens"] * layout["decode_bytes_per_token"] / runs["decode"]
        load = layout["weight_bytes"] / first["load_s"]
        timed = (first["warmup"] + 1) * (runs["prefill"] + runs["decode"])
        other = (first["wall_s"] - first["load_s"] - timed).clip(lower=0)
        expected.append(
            (settings["warmup"] + 1)
            * (
                settings["prompt_tokens"] * layout["prefill_ops_per_token"] / prefill.median()
                + settings["generate_tokens"] * layout["decode_bytes_per_token"] / decode.median()
            )
            + layout["weight_bytes"] / load.median()
            + other.median()
        )
    assert priced == pytest.approx(sum(expected) / len(expected), rel=0.01)
    speed = device_speed("host", 1, quickstart_repo, "another")
    bench = full_bench(**config["bench"])
    longer = replace(bench, prompt_tokens=2 * bench.prompt_tokens)
    prefill = bench.prompt_tokens * layout["prefill_ops_per_token"]
    added = (bench.warmup + 1) * prefill / speed.prefill_ops_per_s
    base = invocation_s(speed, layout, bench)
    assert invocation_s(speed, layout, longer) - base == pytest.approx(added)
    moved = tmp_path / "layout.json"
    shutil.move(quickstart_repo / f"results/models/{model}/layout.json", moved)
    try:
        (line,) = [x for x in lines_of(root, config, "b.yaml", tmp_path) if "device `host`" in x]
        assert line.endswith("not estimated (no earlier run of this experiment on it)")
    finally:
        shutil.move(moved, quickstart_repo / f"results/models/{model}/layout.json")


def test_an_earlier_table_damaged_by_hand_stops_the_dag_with_one_line(root, tmp_path):
    """The dry run prices the phone from this experiment's earlier bench.csv: with a column
    dropped (a real run's table, the shipped host archive's) `snakemake -n` ends with one line
    naming the file and the column, not a KeyError raised while the DAG is built."""
    import pandas as pd
    from conftest import run_snakemake

    with tarfile.open(root / "benchmarks/results/host-sme2-archive.tar.gz") as tar:
        table = pd.read_csv(tar.extractfile("results/host-sme2/bench.csv"))
    bench = tmp_path / "results/paper-x300/bench.csv"
    bench.parent.mkdir(parents=True)
    table.assign(device="x300").drop(columns=["model"]).to_csv(bench, index=False)
    proc = run_snakemake(
        tmp_path,
        "-n",
        "--snakefile",
        str(root / "Snakefile"),
        "--configfile",
        str(root / "config/paper.yaml"),
        check=False,
    )
    assert proc.returncode != 0
    last = (proc.stdout + proc.stderr).strip().splitlines()[-1]
    assert last.startswith("error: results/paper-x300/bench.csv: columns ['model'] missing")
    assert "KeyError" not in proc.stdout + proc.stderr
