"""The adb device kind, through adbutils and the real adb server, against a loopback phone.

Only the phone is replaced (tests/loopback_adbd.py speaks the device side of the ADB wire
protocol); adbutils and the adb server are the real ones from the adbutils wheel.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace

import pytest
from conftest import (
    ILLUSTRATIVE_PROPS,
    PREBUILT_ENGINE,
    ROOT,
    SHORT_SETTINGS,
    full_bench,
    full_variant,
    two_variant_specs,
)

from mnnrepro.devices.adb import AdbDevice, AdbDeviceError
from mnnrepro.files import read_json
from mnnrepro.runs.benchmark import run_schedule
from mnnrepro.runs.gates import quiet_gate, thermal_gate
from mnnrepro.runs.greedy import run_greedy
from mnnrepro.runs.schedule import interleaved
from mnnrepro.runs.staging import push_receipt

BENCH = full_bench(**{**SHORT_SETTINGS, "max_temp_c": 60, "thermal_timeout_s": 5})
ENGINE = PREBUILT_ENGINE
ONE_THREAD = full_variant("v", {"engine": "e", "runtime": {"thread_num": 1}})
specs = two_variant_specs


def test_facts_of_the_phone(loopback_phone):
    _, spec = loopback_phone
    facts = AdbDevice("phone", spec).facts()
    assert facts["model"] == "Loopback SME2 Phone"
    assert facts["sme2"] is True  # from a Dimensity 9500's real /proc/cpuinfo
    assert facts["cpu_count"] == 2 and "sme2" in facts["cpu_features_per_core"][0]
    assert facts["thermal_status"] == 0
    assert facts["fingerprint"] == ILLUSTRATIVE_PROPS["ro.build.fingerprint"]
    assert facts["kernel"]  # `uname -r` on the phone
    # SME as the kernel tells it: cores listing sme2 per cluster, the default streaming vector
    # length where the kernel supports SME (the loopback phone's 64 bytes is illustrative)
    assert facts["sme2_cores"] == [0, 1]
    assert facts["sme2_cores_by_cluster"] == {"0": [0], "1": [1]}
    assert facts["sme_default_vector_length_bytes"] == 64
    assert facts["sme_units"] == "not exposed by the kernel"
    # every zone is recorded as the phone reports it, temperatures or not
    assert facts["thermal_c"]["thermal_zone1:cpu-1-0"] == 39.0
    assert facts["thermal_c"]["thermal_zone5:pmic-tz"] == 255.0
    assert facts["battery"] == {"level": 87, "temperature_c": 31.0, "charging": True}
    assert facts["workdir_free_kb"] > 0


def test_a_phone_without_sme2_has_no_sme2_cores_and_no_vector_length():
    """A Dimensity 9400+'s real cpuinfo (sve2, no SME), one cluster per line as adb reads it;
    the facts of a phone whose kernel has no SME ABI file."""
    from mnnrepro.devices.phone_readings import sme_facts

    cpuinfo = (ROOT / "tests" / "data" / "devices" / "dimensity9400plus.cpuinfo").read_text()
    per_core = [
        line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if "Features" in line
    ]
    facts = sme_facts(per_core, "cpu0 3000000 0\ncpu1 3000000 0\n", "")
    assert facts["sme2_cores"] == [] and facts["sme2_cores_by_cluster"] == {}
    assert facts["sme_default_vector_length_bytes"] is None
    # a phone where only the big cores list sme2 (made-up layout): grouped by cluster
    mixed = [["asimd"], ["asimd", "sme", "sme2"], ["asimd", "sme", "sme2"]]
    facts = sme_facts(mixed, "cpu0 2000000 0\ncpu1 3000000 1\ncpu2 3000000 1\n", "64")
    assert facts["sme2_cores"] == [1, 2] and facts["sme2_cores_by_cluster"] == {"1": [1, 2]}
    assert facts["sme_default_vector_length_bytes"] == 64


def test_serial_errors_list_what_is_attached(loopback_phone):
    phone, spec = loopback_phone
    AdbDevice("phone", spec)  # adb connect
    with pytest.raises(AdbDeviceError, match=r"`devices.phone.adb.serial`: 'nope' is not"):
        # waits `ready_timeout_s` for it to appear (15 s by default), then lists what is there
        AdbDevice("phone", {**spec, "serial": "nope", "connect": False, "ready_timeout_s": 1})
    assert AdbDevice("phone", {**spec, "serial": "auto", "connect": False}).serial == phone.serial


def test_second_push_moves_zero_bytes(loopback_phone, tiny_model):
    _, spec = loopback_phone
    first = push_receipt(AdbDevice("phone", spec), {"mnn": str(tiny_model)}, "tiny")
    assert first["bytes_pushed"] > 0 and first["files_skipped"] == 0
    second = push_receipt(AdbDevice("phone", spec), {"mnn": str(tiny_model)}, "tiny")
    assert second["bytes_pushed"] == 0
    assert second["files_skipped"] == len(first["files"])


def test_corrupted_file_on_the_device_is_refused_by_name(loopback_phone, tiny_model):
    _, spec = loopback_phone
    device = AdbDevice("phone", spec)
    receipt = push_receipt(device, {"mnn": str(tiny_model)}, "tiny")
    runner = receipt["runner"]
    with open(runner, "a") as fh:  # the device's file system is the sandbox on this host
        fh.write("# tampered\n")
    with pytest.raises(AdbDeviceError, match=r"refusing to run on phone: .*python_runner.py"):
        run_greedy(
            AdbDevice("phone", spec),
            receipt,
            ENGINE,
            full_variant("v", {"engine": "e"}),
            ["hi"],
            4,
            60,
        )


def test_commands_are_quoted_not_executed(loopback_phone, tmp_path):
    _, spec = loopback_phone
    device = AdbDevice("phone", spec)
    evil = ["a b", "it's", 'say "hi"', "x; touch pwned", "$(touch pwned2)", "`id`", "&&", "*"]
    result = device.run(["printf", "%s\\n", *evil], timeout=30)
    assert result.ok
    assert result.stdout.splitlines() == evil
    assert not list(tmp_path.rglob("pwned*"))


def test_env_reaches_the_command_quoted(loopback_phone, tmp_path):
    """Variables reach the command itself (an engine's LD_LIBRARY_PATH, a variant's env),
    quoted like its arguments."""
    _, spec = loopback_phone
    device = AdbDevice("phone", spec)
    value = "two words; touch pwned3 $(id)"
    result = device.run(
        ["sh", "-c", 'printf "%s|%s\\n" "$MNN_CPU_TARGET" "$LD_LIBRARY_PATH"'],
        timeout=30,
        env={"MNN_CPU_TARGET": "2", "LD_LIBRARY_PATH": value},
    )
    assert result.ok, result.stderr
    assert result.stdout.strip() == f"2|{value}"
    assert not list(tmp_path.rglob("pwned*"))
    # the recorded line is what a person types on the controller: the real adb program runs
    # it on the phone and gets the same answer
    import shlex
    import subprocess

    from mnnrepro.devices.adb_server import adb_binary

    argv = shlex.split(result.command_line)
    assert argv[0] == "adb" and argv[argv.index("-s") + 1] == device.serial
    again = subprocess.run(
        [adb_binary(), *argv[1:]], capture_output=True, text=True, timeout=60, check=False
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"2|{value}"
    assert not list(tmp_path.rglob("pwned*"))


def test_greedy_and_interleaved_bench_on_the_phone(loopback_phone, tiny_model, tmp_path):
    _, spec = loopback_phone
    receipt = push_receipt(AdbDevice("phone", spec), {"mnn": str(tiny_model)}, "tiny")
    greedy = run_greedy(AdbDevice("phone", spec), receipt, ENGINE, ONE_THREAD, ["hi"], 4, 60)
    assert len(greedy["answers"][0]["tokens"]) == 4
    index, _ = run_schedule(
        AdbDevice("phone", spec),
        interleaved(["a", "b"], 2),
        specs(),
        receipt,
        BENCH,
        tmp_path / "raw",
    )
    records = [read_json(e["raw"]) for e in index]
    assert [r["variant"] for r in records] == ["a", "b", "b", "a"]
    assert all(r["thermal_gate"]["cool"] for r in records)
    # the phone's governor and frequency per core, before and after each invocation
    for r in records:
        for when in ("cpufreq_before", "cpufreq_after"):
            assert r[when] == {
                "cpu0": {"governor": "schedutil", "cur_khz": 2_000_000},
                "cpu1": {"governor": "schedutil", "cur_khz": 3_200_000},
            }
    assert all(r["results"][1]["tokens"] == 4 for r in records)
    # what ran on the phone, per invocation: its firmware, its screen, its battery
    for r in records:
        assert r["build_fingerprint"] == ILLUSTRATIVE_PROPS["ro.build.fingerprint"]
        assert r["screen_before"] == {"wakefulness": "Awake", "display": "ON"}
        assert r["battery_after"]["charging"] is True


def test_thermal_gate_waits_for_the_phone_to_cool_and_is_bounded(
    loopback_phone, capsys, monkeypatch
):
    from mnnrepro.runs import gates

    phone, spec = loopback_phone
    status = phone.sandbox / "dumpsys" / "thermalservice.txt"
    zone = phone.sandbox / "sys" / "class" / "thermal" / "thermal_zone1" / "temp"
    status.write_text("Thermal Status: 2\n")
    zone.write_text("52000\n")

    def cool_down():
        time.sleep(2)
        status.write_text("Thermal Status: 0\n")
        zone.write_text("39000\n")

    def say(text):  # the phone cools 2 s after the gate first said it was hot, however slow
        gates_say(text)  # its readings over adb are on a busy machine
        if cooling.ident is None:  # not started yet
            cooling.start()

    cooling, gates_say = threading.Thread(target=cool_down, daemon=True), gates.say
    monkeypatch.setattr(gates, "say", say)
    device = AdbDevice("phone", spec)
    gate = thermal_gate(device, full_bench(**{"max_temp_c": 45, "thermal_timeout_s": 60}))
    assert cooling.ident is not None  # it waited, and said so
    assert gate["cool"] and gate["waited_s"] >= 2 and gate["thermal_status"] == 0
    said = capsys.readouterr().out  # what it waits for, at once (and every 30 s)
    waiting = r"phone: waiting \d+ s of 60 s \(bench.thermal_timeout_s\) to cool to 45 C"
    assert re.search(waiting, said)
    assert "thermal status 2, hottest 52.0 C (thermal_zone1:cpu-1-0 52)" in said

    zone.write_text("52000\n")  # stays hot: the gate gives up at its timeout and says so
    gate = thermal_gate(device, full_bench(**{"max_temp_c": 45, "thermal_timeout_s": 1}))
    assert not gate["cool"] and gate["waited_s"] >= 1


def test_the_phones_background_load_comes_from_its_own_proc_stat(loopback_phone):
    """Over adb: /proc/stat and /proc/uptime read twice in one shell command (the loopback
    phone's are this host's, which it shares), so the quiet gate measures phones too."""
    import os

    from mnnrepro.devices.phone_readings import phone_load

    _, spec = loopback_phone
    load = AdbDevice("phone", spec).other_load_now(0.3)
    assert load is not None and 0 <= load <= os.cpu_count() + 0.5  # give or take the ticks
    gate = quiet_gate(
        AdbDevice("phone", spec),
        full_bench(**{"max_other_load": 64, "quiet_timeout_s": 5, "quiet_window_s": 0.2}),
    )
    assert gate["quiet"] is True and gate["load"] is not None
    # two readings 2 s apart in which the phone's CPUs were busy for 150 ticks: 0.75 CPUs
    lines = ["100.00 50.0", "cpu 1000 0 500 9000 0 0 0 0 0 0", "102.00 50.0"]
    assert phone_load([*lines, "cpu 1100 0 550 9100 0 0 0 0 0 0"]) == 0.75
    assert phone_load(lines) is None  # a reading missing: no number, not a guess


def test_the_phones_load_during_an_invocation_excludes_the_invocations_own_work(
    loopback_phone,
):
    """A measured invocation on the phone: its own CPU time (a fixed amount of work, however
    busy the host) is counted as its own, not as other load; a real neighbour spinning on the
    loopback phone's CPUs (this host's) while it runs shows as other load; the command's
    output, exit code and recorded line are its own, the probe around it is not in them."""
    import subprocess
    import sys

    from mnnrepro.devices.phone_readings import invocation_load

    _, spec = loopback_phone
    phone = AdbDevice("phone", spec)
    work = [sys.executable, "-c", "n = 0\nfor i in range(10_000_000): n += i\nprint(n)"]
    result = phone.run_invocation(work, timeout=120)
    assert result.ok and result.stdout.strip() == str(sum(range(10_000_000)))
    assert result.own_cpu_s > 0.2 and result.other_load is not None
    assert ".load-probe" not in result.command_line and "range(10_000_000)" in result.command_line
    failed = phone.run_invocation(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert (failed.returncode, failed.stdout, failed.stderr) == (3, "out\n", "err\n")
    neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = phone.run_invocation(["sleep", "1.5"], timeout=30)
    finally:
        neighbour.kill()
        neighbour.wait()
    assert busy.other_load > 0.6 and busy.own_cpu_s < 0.2
    # the arithmetic: 2 s window, 300 busy ticks (1.5 CPUs), 1 s of it the command's own
    readings = ["10.0 1", "cpu 0 0 0 0 0 0 0 0", "12.0 1", "cpu 200 0 100 0 0 0 0 0"]
    stat = "77 (sh) S 1 77 77 0 -1 0 0 0 0 0 0 0 " + "60 40 20 0"
    assert invocation_load([*readings, stat]) == (1.0, 1.0)
    assert invocation_load(readings) == (None, None)  # no stat line: no number, not a guess


def test_a_real_phones_zone_layout_passes_the_thermal_gate_at_once(loopback_phone):
    """A cool phone whose charger sensor reads 52 degrees and whose placeholders read 127 and
    255: the gate waits on Android's CPU and skin temperatures, not on every zone (the old gate
    waited out its timeout before every invocation); without HAL temperatures it waits on the
    die zones and says what it ignored and why; `bench.thermal_zones` overrides both."""
    phone, spec = loopback_phone
    device = AdbDevice("phone", spec)
    bench = full_bench(max_temp_c=45, thermal_timeout_s=1)
    gate = thermal_gate(device, bench)
    assert gate["cool"] and gate["hottest_gated_c"] == 39.0
    assert gate["gated_on"] == ["hal:cpu-0-0-usr", "hal:cpu-1-0-usr", "hal:skin"]
    assert gate["temps_c"]["thermal_zone3:charger-therm"] == 52.0  # recorded all the same
    assert gate["temps_c"]["hal:battery"] == 31.0

    status = phone.sandbox / "dumpsys" / "thermalservice.txt"
    status.write_text("Thermal Status: 0\n")  # a phone whose HAL lists no temperatures
    gate = thermal_gate(device, bench)
    assert gate["cool"] and gate["gated_on"] == ["thermal_zone0:cpu-0-0", "thermal_zone1:cpu-1-0"]
    ignored = gate["ignored"]
    assert "not a die temperature" in ignored["thermal_zone3:charger-therm"]
    assert ignored["thermal_zone6:ddr-therm"] == "reads 0 °C: not a die temperature"
    assert ignored["thermal_zone7:sdm-therm"] == "reads -40 °C: not a die temperature"
    assert set(ignored) >= {"thermal_zone4:pa-therm0", "thermal_zone5:pmic-tz", "thermal_zone8:soc"}

    chosen = thermal_gate(device, replace(bench, thermal_zones=("*:charger-therm",)))
    assert not chosen["cool"] and chosen["gated_on"] == ["thermal_zone3:charger-therm"]


# ---- Android conventions: ANDROID_SERIAL, the adb server's host and port, adb itself ---------


def test_serial_auto_takes_android_serial_when_several_phones_are_attached(two_phones, monkeypatch):
    (_, first), (second_phone, second) = two_phones
    for spec in (first, second):  # both attached to the same server
        AdbDevice("x", spec).close()
    auto = {**second, "serial": "auto", "connect": False}
    with pytest.raises(AdbDeviceError, match="needs exactly one attached device"):
        AdbDevice("phone", auto)
    monkeypatch.setenv("ANDROID_SERIAL", second_phone.serial)
    device = AdbDevice("phone", auto)
    assert device.serial == second_phone.serial
    device.close()


def test_the_adb_server_port_comes_from_the_environment_when_unset(
    loopback_phone, adb_server_port, monkeypatch
):
    _, spec = loopback_phone
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(adb_server_port))
    unset = {k: v for k, v in spec.items() if k != "server_port"}
    device = AdbDevice("phone", unset)  # reaches the phone through the private server
    assert device.client.port == adb_server_port
    device.close()


def test_server_address_order_and_a_remote_server_is_never_started():
    from mnnrepro.devices.adb_server import ensure_server, server_address

    env = {"ANDROID_ADB_SERVER_HOST": "lab-host", "ANDROID_ADB_SERVER_PORT": "5039"}
    assert server_address({}, {}) == ("127.0.0.1", 5037)
    assert server_address({}, env) == ("lab-host", 5039)
    assert server_address({"server_host": "h", "server_port": 6000}, env) == ("h", 6000)
    with pytest.raises(AdbDeviceError, match=r"no adb server answers at 127\.0\.0\.2:"):
        ensure_server(1, "127.0.0.2")  # another host (here a second loopback address)


def test_adb_is_found_as_adbutils_finds_it(monkeypatch, tmp_path):
    from mnnrepro.devices.adb_server import adb_binary

    mine = tmp_path / "adb"
    mine.write_text("#!/bin/sh\n")
    mine.chmod(0o755)
    monkeypatch.setenv("ADBUTILS_ADB_PATH", str(mine))
    assert adb_binary() == str(mine)
