"""The resumable interleaved schedule, run for real on the local device with the tiny model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import PREBUILT_ENGINE, SHORT_BENCH, design_stats, two_variant_specs

from mnnrepro.devices.base import CommandResult
from mnnrepro.devices.local import LocalDevice
from mnnrepro.engines.device_io import BenchError
from mnnrepro.errors import DataError
from mnnrepro.files import read_json
from mnnrepro.runs.benchmark import run_schedule
from mnnrepro.runs.schedule import interleaved
from mnnrepro.runs.staging import push_receipt

BENCH = SHORT_BENCH
ENGINE = PREBUILT_ENGINE
specs = two_variant_specs


def staged(device, model):
    return push_receipt(device, {"mnn": str(model)}, "tiny")


class CountingDevice(LocalDevice):
    """The real local device, counting runs; optionally interrupted like Ctrl-C after k runs."""

    def __init__(self, interrupt_after=None, fail_first=0):
        super().__init__("host")
        self.runs = 0
        self.interrupt_after = interrupt_after
        self.fail_first = fail_first

    def run(self, argv, timeout, env=None):
        if self.interrupt_after is not None and self.runs == self.interrupt_after:
            raise KeyboardInterrupt
        self.runs += 1
        if self.runs <= self.fail_first:
            return CommandResult(argv, 1, "", "simulated crash of the engine", 0.0)
        return super().run(argv, timeout, env)


def test_interrupted_run_resumes_and_keeps_every_repetition_once(tiny_model, tmp_path):
    plan = interleaved(["a", "b"], 3)
    first = CountingDevice(interrupt_after=4)
    with pytest.raises(KeyboardInterrupt):
        run_schedule(first, plan, specs(), staged(first, tiny_model), BENCH, tmp_path)
    first.close()
    kept = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    # schedule a b / b a / a b: the first four invocations finished
    assert kept == ["a/rep-000.json", "a/rep-001.json", "b/rep-000.json", "b/rep-001.json"]
    assert not list(tmp_path.rglob("*.part-*"))

    second = CountingDevice()
    index, _ = run_schedule(second, plan, specs(), staged(second, tiny_model), BENCH, tmp_path)
    second.close()
    assert second.runs == 2  # only the missing ones
    pairs = [(e["invocation"]["variant"], e["invocation"]["block"]) for e in index]
    assert sorted(pairs) == sorted({(v, b) for v in "ab" for b in range(3)})
    orders = [read_json(e["raw"])["invocation"]["run_order"] for e in index]
    assert orders == list(range(6))


def test_changed_settings_are_measured_again(tiny_model, tmp_path):
    plan = interleaved(["a", "b"], 2)
    device = CountingDevice()
    run_schedule(device, plan, specs(), staged(device, tiny_model), BENCH, tmp_path)
    run_schedule(device, plan, specs(), staged(device, tiny_model), BENCH, tmp_path)
    assert device.runs == 4  # second pass reused everything
    run_schedule(
        device,
        plan,
        specs({"thread_num": 2, "precision": "normal"}),
        staged(device, tiny_model),
        BENCH,
        tmp_path,
    )
    assert device.runs == 6  # variant a changed: its 2 invocations ran again
    device.close()


def test_a_changed_runner_measures_again():
    """The Python runner holds the timing loop: its hash is part of what was measured."""
    from mnnrepro.files import sha256_file
    from mnnrepro.runs.raw_files import plan_key
    from mnnrepro.runs.staging import RUNNER

    spec = specs()["a"]
    assert spec["runner_sha256"] == sha256_file(RUNNER)
    assert plan_key(spec) != plan_key({**spec, "runner_sha256": "0" * 64})


def test_failed_invocation_is_retried_then_reported(tiny_model, tmp_path):
    plan = interleaved(["a", "b"], 1)
    flaky = CountingDevice(fail_first=1)
    run_schedule(
        flaky, plan, specs(), staged(flaky, tiny_model), replace(BENCH, retries=1), tmp_path
    )
    assert read_json(tmp_path / "a" / "rep-000.json")["attempts"] == 2
    flaky.close()

    broken = CountingDevice(fail_first=99)
    with pytest.raises(BenchError, match="simulated crash of the engine"):
        run_schedule(
            broken,
            plan,
            specs(),
            staged(broken, tiny_model),
            replace(BENCH, retries=2),
            tmp_path / "other",
        )
    assert broken.runs == 3
    broken.close()


def test_precision_on_demand_stops_where_the_records_say_and_resumes_the_same(tiny_model, tmp_path):
    """Real invocations; the stopping rule decides from their raw records. A target no real
    run reaches (1e-6) runs to max; a rerun keeps every record and stops at the same block."""
    from mnnrepro.intervals import run_intervals
    from mnnrepro.runs.precision import stopping_decision

    def stop_at(target):
        repetitions = {"min": 4, "max": 5, "target_half_width": target}
        chosen = run_intervals(design_stats(), repetitions)
        return lambda records, blocks: stopping_decision(
            records, blocks, repetitions, [("a", "b")], chosen
        )

    plan = interleaved(["a", "b"], 5)
    device = CountingDevice()
    receipt = staged(device, tiny_model)
    index, stopped = run_schedule(device, plan, specs(), receipt, BENCH, tmp_path, stop_at(1e-6))
    assert device.runs == 10 and len(index) == 10
    assert stopped["reason"] == "max 5 blocks reached before the target half-width 0.0%"
    assert set(stopped["half_widths"]) == {"a/b prefill", "a/b decode"}
    again, stopped_again = run_schedule(
        device, plan, specs(), receipt, BENCH, tmp_path, stop_at(1e-6)
    )
    assert device.runs == 10 and again == index and stopped_again == stopped
    # a target every run reaches stops at min, keeping what was measured
    index, stopped = run_schedule(device, plan, specs(), receipt, BENCH, tmp_path, stop_at(1e6))
    assert device.runs == 10 and len(index) == 8
    assert stopped["blocks"] == 4 and stopped["reason"].startswith("target half-width")
    device.close()


def test_a_raw_record_holds_the_command_that_repeats_it_by_hand(tiny_model, tmp_path):
    """Every raw record keeps the argv, the variables set for it and the exact shell line; the
    line, run by a shell, is the same invocation (it writes the engine's reading again)."""
    import json
    import subprocess

    device = CountingDevice()
    index, _ = run_schedule(
        device, interleaved(["a"], 1), specs(), staged(device, tiny_model), BENCH, tmp_path
    )
    device.close()
    record = read_json(index[0]["raw"])
    command = record["command"]
    assert command["argv"][1].endswith("python_runner.py") and "--out" in command["argv"]
    out = command["argv"][command["argv"].index("--out") + 1]
    assert not Path(out).exists()  # the host device's scratch directory went with the job
    again = subprocess.run(
        ["sh", "-c", command["line"]], capture_output=True, text=True, timeout=300, check=False
    )
    assert again.returncode == 0, again.stderr
    repeated = json.loads(Path(out).read_text())
    phases = [r["phase"] for r in repeated["results"]]
    assert phases == [r["phase"] for r in record["results"]]
    assert [r["tokens"] for r in repeated["results"]] == [r["tokens"] for r in record["results"]]


def test_remeasure_measures_again_keeps_the_old_files_and_resumes(tiny_model, tmp_path):
    """`--config remeasure=<label>`: everything not measured under the label runs again; the
    replaced raw files are kept beside them; an interrupted re-measurement resumes; a later
    run without the label keeps the new measurements."""
    plan = interleaved(["a", "b"], 2)
    device = CountingDevice()
    receipt = staged(device, tiny_model)
    run_schedule(device, plan, specs(), receipt, BENCH, tmp_path)
    assert device.runs == 4
    interrupted = CountingDevice(interrupt_after=1)
    with pytest.raises(KeyboardInterrupt):
        run_schedule(interrupted, plan, specs(), receipt, BENCH, tmp_path, remeasure="r1")
    run_schedule(device, plan, specs(), receipt, BENCH, tmp_path, remeasure="r1")
    assert device.runs == 4 + 3  # one was re-measured before the interruption
    index, _ = run_schedule(device, plan, specs(), receipt, BENCH, tmp_path, remeasure="r1")
    index, _ = run_schedule(device, plan, specs(), receipt, BENCH, tmp_path)
    assert device.runs == 7  # resumed, then kept
    assert all(read_json(e["raw"])["remeasure"] == "r1" for e in index)
    assert len(list(tmp_path.rglob("rep-*.json.superseded-*"))) == 4  # the first measurements
    # ... and the record says so: each index entry lists what it replaced, hashed, with why
    for entry in index:
        (earlier,) = entry["superseded"]
        assert Path(earlier["raw"]).exists() and earlier["raw"].startswith(entry["raw"])
        assert earlier["reason"] == "re-measured under label 'r1'"
        assert read_json(entry["raw"])["supersedes"]["raw"] == earlier["raw"]
    interrupted.close()
    device.close()

    # bench.csv counts them, the summary says per pair how many and why
    from mnnrepro.analysis.summary import remeasurements
    from mnnrepro.analysis.tables import bench_table

    indexed = {"runs.json": {"experiment": "e", "model": "tiny", "emulated": False, "runs": index}}
    table = bench_table(indexed)
    assert set(table["superseded"]) == {1} and set(table["remeasure"]) == {"r1"}
    decode = table[table["phase"] == "decode"]
    counted = remeasurements(decode, ("a", "b"))
    assert counted["remeasured_invocations"] == 4
    assert "label r1" in counted["remeasurements"]
    # a superseded file edited after the fact is refused like the raw file itself
    first = Path(index[0]["superseded"][0]["raw"])
    first.write_text(first.read_text().replace('"status"', '"status" ', 1))
    with pytest.raises(DataError, match="superseded"):
        bench_table(indexed)
    # an index older than the trace: how often it was measured is not known, not 0
    old = {k: {**v, "runs": [{**e} for e in v["runs"]]} for k, v in indexed.items()}
    for entry in old["runs.json"]["runs"]:
        del entry["superseded"]
    assert bench_table(old)["superseded"].isna().all()
    assert remeasurements(bench_table(old), ("a", "b"))["remeasured_invocations"] is None
