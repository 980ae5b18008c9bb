"""The tiny experiment on an adb device: real Snakemake, real adb server, loopback phone."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml
from conftest import assert_png, run_snakemake, snakemake_argv

pytestmark = pytest.mark.slow


def adb_config(root, spec, repetitions=3):
    cfg = yaml.safe_load((root / "tests/workflow/config-tiny.yaml").read_text())
    cfg["attribution"] = {"enabled": False}  # profiling is tests/workflow/test_workflow.py's
    cfg["experiment"] = "tiny-adb"
    cfg["devices"] = {"phone": {"adb": spec}}
    cfg["bench"]["repetitions"] = repetitions
    return cfg


def command(root, workdir, config_path, *args):
    return snakemake_argv(
        "--cores", "2", "--configfile", config_path, "--directory", workdir, *args
    )


def run(root, workdir, config_path, *args, check=True):
    return run_snakemake(
        root,
        "--cores",
        "2",
        "--configfile",
        config_path,
        "--directory",
        workdir,
        *args,
        check=check,
    )


PREDICTED = "benchmarks/results/predicted_gain.json"


def assert_scored_by_the_registered_prediction(root, out, prompt: int):
    """Every row judged against its claim in prefill and decode carries the registered
    prediction beside it; a prediction for 1 thread and a 512-token prompt is no prediction of
    this run's 1 -> 2 threads at its own prompt, nor of its tiny model, so no row is scored,
    each saying why (no containment, no log error); what differs is named."""
    registered = json.loads((root / PREDICTED).read_text())["prediction"]
    (predicted,) = registered["predictions"]
    summary = pd.read_csv(out / "summary.csv")
    scored = summary[summary["predicted_gain"].notna()]
    assert set(scored["phase"]) == {"prefill", "decode"} and set(scored["device"]) == {"phone"}
    assert summary[~summary["phase"].isin(["prefill", "decode"])]["predicted_gain"].isna().all()
    for r in scored.itertuples():
        got = predicted["phases"][r.phase]
        assert (r.predicted_gain, r.predicted_gain_high) == (got["gain"], got["high"])
        assert r.not_scored == (
            f"threads [1, 1] predicted, [1, 2] measured; prompt_tokens 512 predicted, "
            f"{prompt} measured; model qwen3-vl-4b (hidden size 2560, 36 layers) predicted, "
            f"{r.model} (hidden size 64, 2 layers) measured"  # the engine's llm_config.json
        )
        assert pd.isna(r.measured_holds_prediction) and pd.isna(r.prediction_holds_measured)
        assert pd.isna(r.log_error)
    document = json.loads((out / "prediction.json").read_text())
    assert document["registered"]["file"] == PREDICTED
    assert (
        "`comparison` treatment: runtime `thread_num` 1 predicted, 2 measured"
        in document["differences"]
    )
    report = (out / "summary.md").read_text()
    start = report.index("## Predicted before the phone")
    section = report[start : report.index("\n## ", start)]
    assert "Not like for like" in section and f"registered from {PREDICTED}" in section
    rows = [line for line in section.splitlines() if "| phone | " in line]
    assert {row.split(" | ")[1] for row in rows} == {"prefill", "decode"}
    assert any("| +81% | phone | " in row for row in rows)  # the claim beside both
    assert all("| not scored: threads [1, 1] predicted, [1, 2] measured" in row for row in rows)


def test_tiny_experiment_on_an_adb_phone(root, loopback_phone, seed_models, tmp_path):
    _, spec = loopback_phone
    config_path = tmp_path / "adb.yaml"
    cfg = adb_config(root, spec)
    # how the gain changes with MNN's SME2 thread count: one more point, every variant at 1
    cfg["bench"]["sweep"] = {"cpu_sme_core_num": [1], "repetitions": 2}
    # the X300's prediction, made before this run, scores the phone's judged pair; with the
    # article's claim, summary.md shows prediction, claim and measurement side by side
    pinned = hashlib.sha256((root / PREDICTED).read_bytes()).hexdigest()
    cfg["prediction"] = {"registered": PREDICTED, "sha256": pinned}
    cfg["comparison"]["claims"] = {"prefill": 0.81, "decode": 0.13}
    config_path.write_text(yaml.safe_dump(cfg))
    seed_models(tmp_path, cfg["models"])
    run(root, tmp_path, config_path)
    out = tmp_path / "results" / "tiny-adb"
    assert_scored_by_the_registered_prediction(root, out, cfg["bench"]["prompt_tokens"])
    sweep = pd.read_csv(out / "sweep" / "summary.csv")
    point = sweep[sweep["point"] != "main"]
    assert set(point["point"]) == {"p32-n8-t--scn1"} and set(point["cpu_sme_core_num"]) == {1}
    assert sweep[sweep["point"] == "main"]["cpu_sme_core_num"].isna().all()  # the engine's own
    swept = pd.read_csv(out / "sweep" / "bench.csv")
    assert set(swept["cpu_sme_core_num"]) == {1} and set(swept["device"]) == {"phone"}
    index = json.loads((out / "sweep/runs/phone/synth-tiny-vl/p32-n8-t--scn1.json").read_text())
    raw = json.loads((tmp_path / index["runs"][0]["raw"]).read_text())
    assert raw["spec"]["runtime"]["cpu_sme_core_num"] == 1  # what the runner was given
    tests = pd.read_csv(out / "engine_tests.csv")  # the wheel has no suite: its row says so
    assert tests[["device", "engine", "outcome"]].values.tolist() == [
        ["phone", "mnn-pypi", "no test suite"]
    ]
    bench = pd.read_csv(out / "bench.csv")
    assert set(bench["device"]) == {"phone"}
    # the same shape of table as on `local`: prefill, decode and the image question's phases
    assert len(bench) == 2 * 5 * 3
    facts = yaml.safe_load((out / "devices" / "phone.json").read_text())
    assert facts["sme2"] is True and facts["kind"] == "adb"
    for chart in ("runs", "speedup"):
        assert_png(out / "plots" / f"{chart}.png")
    # the bandwidth probe ran on the phone through adb (built for the engine's platform;
    # the loopback phone runs host binaries), every sample kept
    bandwidth = yaml.safe_load((out / "bandwidth" / "phone.json").read_text())
    # at the variants' thread counts (1, 2) and on every core: none missing, or the loop
    # below would check nothing
    threads = sorted(m["threads"] for m in bandwidth["measurements"])
    assert threads == sorted({1, 2, facts["cpu_count"]})
    for measured in bandwidth["measurements"]:
        assert len(measured["samples"]) == 10
        assert all(s["gb_per_s"] > 0 for s in measured["samples"])
        assert measured["argv"][-4].startswith(spec["workdir"])
        # below every core, pinned to the fastest ones (the phone's cpu1 runs at 3.2 GHz)
        if measured["threads"] < facts["cpu_count"]:
            assert measured["cores"] == [1] and measured["argv"][:2] == ["taskset", "2"]
        else:
            assert measured["cores"] is None and measured["argv"][0] != "taskset"
    # the variants' 1 and 2 threads, and every core the phone's /proc/cpuinfo lists
    assert [m["threads"] for m in bandwidth["measurements"]] == sorted({1, 2, facts["cpu_count"]})
    # energy: the battery's power-supply files, sampled through adb during every invocation
    assert bench["power_source"].str.contains("power_supply/battery/current_now").all()
    assert (bench["joules_per_token"] > 0).all()
    # on the phone's own clock: the runner's phase windows and the samples (/proc/uptime read
    # with the current) line up, so no window is inferred; the tiny model's phases may be
    # shorter than the sampling interval, and then say so
    windows = set(bench["power_window"])
    assert windows <= {"recorded", "invocation mean (no sample in the recorded window)"}
    assert bench["charging"].all()  # the loopback phone's dumpsys battery: USB powered
    report = (out / "summary.md").read_text()
    assert "charging during 3 invocations" in report and "unvalidated" in report
    mechanism = yaml.safe_load((out / "mechanism.json").read_text())
    assert {e["phase"] for e in mechanism["energy"]} == {"prefill", "decode"}
    assert "Energy per token" in (out / "summary.md").read_text()
    first = yaml.safe_load((out / "pushed" / "phone" / "synth-tiny-vl.json").read_text())
    assert first["bytes_pushed"] > 0 and first["push_s"] > 0
    # the dry run of another experiment on this phone prices the model's first push from it
    from types import SimpleNamespace

    from mnnrepro.plan.invocation_time import push_s

    rate = first["bytes_pushed"] / first["push_s"]
    manifest = yaml.safe_load((tmp_path / "results/models/synth-tiny-vl/manifest.json").read_text())
    size = sum(f["size"] for f in manifest["files"])
    priced = push_s(SimpleNamespace(models=["synth-tiny-vl"]), "phone", tmp_path)
    assert priced == pytest.approx(size / rate)

    run(root, tmp_path, config_path, "--forcerun", "push_to_device")
    again = yaml.safe_load((out / "pushed" / "phone" / "synth-tiny-vl.json").read_text())
    assert again["bytes_pushed"] == 0
    log = (tmp_path / "logs/push_to_device/tiny-adb/phone/synth-tiny-vl.log").read_text()
    assert "pushed 0 bytes" in log


def test_ctrl_c_mid_benchmark_then_rerun_finishes_only_the_rest(
    root, loopback_phone, seed_models, tmp_path
):
    _, spec = loopback_phone
    config_path = tmp_path / "adb.yaml"
    cfg = adb_config(root, spec, repetitions=3)
    cfg["bench"]["cooldown_s"] = 1.0  # leaves time to interrupt between invocations
    config_path.write_text(yaml.safe_dump(cfg))
    seed_models(tmp_path, cfg["models"])
    raw = tmp_path / "results" / "tiny-adb" / "raw"

    def two_done():
        return len(list(raw.rglob("rep-*.json"))) >= 2

    interrupted(root, tmp_path, config_path, two_done, signal.SIGINT)
    kept = len(list(raw.rglob("rep-*.json")))
    assert 2 <= kept < 6

    run(root, tmp_path, config_path)
    log = (tmp_path / "logs/run_bench/tiny-adb/phone/synth-tiny-vl.log").read_text()
    assert f"{kept} invocations kept from earlier runs, {6 - kept} run now" in log
    bench = pd.read_csv(tmp_path / "results" / "tiny-adb" / "bench.csv")
    counts = bench.groupby(["variant", "phase", "block"]).size()
    assert len(counts) == 2 * 5 * 3 and (counts == 1).all()  # text and vision phases


def test_adb_servers_one_experiment_on_phones_behind_two_servers(
    root, phones_on_two_adb_servers, seed_models, tmp_path
):
    """Two phones on two "hosts" (two adb servers, each phone attached to its own) in one
    experiment: every stage runs on each through its own server, under its own lock (the two
    phones' jobs never wait for each other's; no timing is asserted)."""
    import json

    from mnnrepro.runs.device_lock import lock_path

    (_, spec_a), (_, spec_b) = phones_on_two_adb_servers
    cfg = adb_config(root, spec_a, repetitions=2)
    cfg["devices"] = {"phone-a": {"adb": spec_a}, "phone-b": {"adb": spec_b}}
    config_path = tmp_path / "adb.yaml"
    config_path.write_text(yaml.safe_dump(cfg))
    seed_models(tmp_path, cfg["models"])
    run_snakemake(root, "--cores", "4", "--configfile", config_path, "--directory", tmp_path)
    out = tmp_path / "results" / "tiny-adb"
    bench = pd.read_csv(out / "bench.csv")
    # 2 variants x 2 repetitions x 5 phases (the tiny Qwen3-VL's image question included)
    assert bench.groupby("device").size().to_dict() == {"phone-a": 20, "phone-b": 20}
    for name, spec in (("phone-a", spec_a), ("phone-b", spec_b)):
        facts = json.loads((out / "devices" / f"{name}.json").read_text())
        assert facts["adb_server"] == f"127.0.0.1:{spec['server_port']}"
        assert facts["serial"] == spec["serial"]
        records = [json.loads(p.read_text()) for p in (out / "raw" / name).rglob("rep-*.json")]
        assert len(records) == 4
        for record in records:  # what was typed names this phone's server and serial
            line = record["command"]["line"]
            assert line.startswith(
                f"adb -H 127.0.0.1 -P {spec['server_port']} -s {spec['serial']} "
            )
        key = f"adb-127.0.0.1-{spec['server_port']}-{spec['serial']}"
        assert lock_path(key).exists()  # its own lock, by server and serial
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["device"]) == {"phone-a", "phone-b"}


def interrupted(root, tmp_path, config_path, when, signum):
    """Start the experiment, send signum to its whole process group (Ctrl-C: SIGINT from the
    terminal; kill -9: SIGKILL) once when() holds; returns once it has ended. Snakemake's output
    goes to a file whose end the failure shows when it ends before it was interrupted."""
    output = tmp_path / f"interrupted-{time.monotonic_ns()}.log"
    with output.open("wb") as sink:
        proc = subprocess.Popen(
            command(root, tmp_path, config_path),
            cwd=root,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, like a shell job
            # Ctrl-C must reach it however pytest was started: a shell's background job
            # inherits SIGINT as ignored, and so would Snakemake (then the run would finish)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    deadline = time.monotonic() + 300
    while not when():
        if proc.poll() is not None:
            pytest.fail(f"snakemake ended before it was interrupted:\n{output.read_text()[-4000:]}")
        assert time.monotonic() < deadline
        time.sleep(0.1)
    os.killpg(proc.pid, signum)
    proc.wait(timeout=120)
    assert proc.returncode != 0


def marked_incomplete(workdir, output) -> None:
    """What a kill -9 leaves when it strikes between a job writing its whole output and
    Snakemake booking the job as done: the output, still marked incomplete (Snakemake's own
    marker, .snakemake/incomplete/<urlsafe base64 of its path>)."""
    import base64

    assert output.is_file()
    key = base64.urlsafe_b64encode(str(output.relative_to(workdir)).encode()).decode()
    marker = workdir / ".snakemake" / "incomplete" / key
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"external_jobid": None}))


def test_ctrl_c_and_kill_9_at_each_stage_then_the_rerun_finishes(
    root, loopback_phone, seed_models, tmp_path
):
    """Snakemake itself interrupted by Ctrl-C and by kill -9 at the push and at the correctness
    gate, and by kill -9 in the benchmark with two repetitions done (Ctrl-C there:
    test_ctrl_c_mid_benchmark_then_rerun_finishes_only_the_rest): each rerun goes on from there
    (after a kill -9, Snakemake's own `--unlock` first, as it says), nothing half-written is
    kept under a final name, the repetitions done are kept byte for byte, and the finished run
    has each invocation once. A kill -9 can also strike after a job wrote its output and before
    Snakemake booked it (marked_incomplete): the rerun does that job again instead of refusing."""
    from fault_matrix import ENGINE, GATE, digests, half_written

    phone, spec = loopback_phone
    config_path = tmp_path / "adb.yaml"
    cfg = adb_config(root, spec, repetitions=3)
    config_path.write_text(yaml.safe_dump(cfg))
    seed_models(tmp_path, cfg["models"])
    out = tmp_path / "results" / "tiny-adb"
    raw = out / "raw"

    def stalled():  # the phone holds the stream it was told to: the moment to interrupt
        return bool(phone.struck)

    for stage, pattern in (("pushed", "^sync:"), ("greedy", GATE)):
        for signum in (signal.SIGINT, signal.SIGKILL):  # Ctrl-C, then kill -9
            phone.struck.clear()
            phone.inject(pattern, "stall", 0.0, 60.0)
            interrupted(root, tmp_path, config_path, stalled, signum)
            assert not list((out / stage).rglob("*.json"))  # no result of the stage
            if signum == signal.SIGKILL:
                run(root, tmp_path, config_path, "--unlock")
        if stage == "pushed":  # a job killed after its output was whole, before it was booked
            marked_incomplete(tmp_path, out / "devices" / "phone.json")

    phone.struck.clear()
    phone.inject(ENGINE, "stall", 0.0, 60.0, nth=3)  # the benchmark, two repetitions done
    interrupted(root, tmp_path, config_path, stalled, signal.SIGKILL)
    done = digests(raw)
    assert len(done) == 2
    run(root, tmp_path, config_path, "--unlock")

    run(root, tmp_path, config_path)
    after = digests(raw)
    assert {path: after.get(path) for path in done} == done  # kept byte for byte
    assert half_written(tmp_path / "results", phone.sandbox) == []
    log = (tmp_path / "logs/run_bench/tiny-adb/phone/synth-tiny-vl.log").read_text()
    assert "2 invocations kept from earlier runs, 4 run now" in log
    bench = pd.read_csv(out / "bench.csv")
    counts = bench.groupby(["variant", "phase", "block"]).size()
    assert len(counts) == 2 * 5 * 3 and (counts == 1).all()


def test_a_phone_lost_for_good_stops_its_own_jobs_only(
    root, phones_on_two_adb_servers, seed_models, tmp_path
):
    """Two phones on two adb servers; one vanishes mid-benchmark and never comes back: its job
    ends with one line naming it, the other phone's benchmark finishes, and the run fails."""
    from fault_matrix import ENGINE

    (_, spec_a), (phone_b, spec_b) = phones_on_two_adb_servers
    cfg = adb_config(root, spec_a, repetitions=2)
    spec_b = {**spec_b, "reconnect_wait_s": 2}
    cfg["devices"] = {"phone-a": {"adb": spec_a}, "phone-b": {"adb": spec_b}}
    config_path = tmp_path / "adb.yaml"
    config_path.write_text(yaml.safe_dump(cfg))
    seed_models(tmp_path, cfg["models"])
    phone_b.inject(ENGINE, "vanish", 0.2)
    result = run(root, tmp_path, config_path, check=False)
    assert result.returncode != 0
    out = tmp_path / "results" / "tiny-adb"
    assert (out / "runs" / "phone-a" / "synth-tiny-vl.json").is_file()  # the other phone's
    assert (out / "validity" / "phone-a" / "synth-tiny-vl.json").is_file()  # and after it
    assert not (out / "runs" / "phone-b").exists()
    log = (tmp_path / "logs/run_bench/tiny-adb/phone-b/synth-tiny-vl.log").read_text()
    assert "lost during the benchmark" in log and "not back within 2 s" in log
