"""One job per device at a time, different devices in parallel: the device lock, with two
loopback phones (and the host). No timing is asserted: a blocked lock is seen as blocked (a
non-blocking attempt fails), a free one is entered while the other is held."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest
from conftest import SHORT_BENCH, full_device_spec, two_variant_specs

from mnnrepro.devices.adb import AdbDevice
from mnnrepro.devices.local import LocalDevice
from mnnrepro.devices.qemu import QemuDevice
from mnnrepro.runs.benchmark import run_schedule
from mnnrepro.runs.device_lock import holding, lock_path
from mnnrepro.runs.schedule import interleaved
from mnnrepro.runs.staging import push_receipt


def would_enter(key: str, mode: int) -> bool:
    """A holder of the lock in mode (fcntl.LOCK_EX: a job of its own; LOCK_SH: an emulated
    device's job) would enter now."""
    with open(lock_path(key), "a+") as handle:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def is_locked(key: str) -> bool:
    return not would_enter(key, fcntl.LOCK_EX)


def can_share(key: str) -> bool:
    return would_enter(key, fcntl.LOCK_SH)


HOLD = (
    "import sys\n"
    "from mnnrepro.runs.device_lock import holding\n"
    "with holding(sys.argv[1], 'another job'):\n"
    "    print('held', flush=True)\n"
    "    sys.stdin.readline()\n"
)


def test_two_phones_run_in_parallel_and_one_phone_runs_one_job(two_phones, tiny_model, tmp_path):
    """Another process (another Snakemake job) holds phone-a; a whole benchmark on phone-b
    runs meanwhile, in a thread given a deadline: had phone-b's job waited for phone-a's lock,
    the thread would still be waiting when the deadline passes, and the test fails."""
    import os
    import subprocess
    import sys
    import threading

    (_, spec1), (_, spec2) = two_phones
    first, second = AdbDevice("phone-a", spec1), AdbDevice("phone-b", spec2)
    same_as_first = AdbDevice("another-name-for-phone-a", spec1)
    assert first.lock_key != second.lock_key
    assert same_as_first.lock_key == first.lock_key  # the phone, not what the config calls it
    receipt = push_receipt(second, {"mnn": str(tiny_model)}, "tiny")
    scripts = str(Path(__file__).resolve().parents[2] / "workflow" / "scripts")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, first.lock_key],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": scripts},
    )
    done = {}

    def bench_on_second():
        with holding(second.lock_key, second.name):
            done["index"], _ = run_schedule(
                second,
                interleaved(["a", "b"], 1),
                two_variant_specs(),
                receipt,
                SHORT_BENCH,
                tmp_path / "raw",
            )
            done["second_locked"] = is_locked(second.lock_key)

    try:
        assert holder.stdout.readline().strip() == "held"
        assert is_locked(first.lock_key)  # a second job on phone-a would wait here
        worker = threading.Thread(target=bench_on_second, daemon=True)
        worker.start()
        worker.join(timeout=300)
        assert not worker.is_alive(), "phone-b's benchmark waited for phone-a's lock"
        assert len(done["index"]) == 2 and done["second_locked"]
        assert is_locked(first.lock_key)  # still held by the other process
    finally:
        holder.communicate("release\n", timeout=60)
    assert not is_locked(first.lock_key) and not is_locked(second.lock_key)
    for device in (first, second, same_as_first):
        device.close()


def test_adb_servers_each_phone_is_locked_by_its_server_and_serial(phones_on_two_adb_servers):
    """Phones behind two adb servers (two "hosts"): each server lists only its own phone, each
    phone's lock names its server and serial, and holding one never blocks the other."""
    (_, spec1), (_, spec2) = phones_on_two_adb_servers
    first, second = AdbDevice("phone-a", spec1), AdbDevice("phone-b", spec2)
    assert [d.serial for d in first.client.list()] == [first.serial]
    assert [d.serial for d in second.client.list()] == [second.serial]
    for device, spec in ((first, spec1), (second, spec2)):
        assert device.lock_key == f"adb-127.0.0.1-{spec['server_port']}-{device.serial}"
        assert device.facts()["adb_server"] == f"127.0.0.1:{spec['server_port']}"
    # the same serial on another server is another phone (emulator-5554 exists on every host)
    elsewhere = AdbDevice("phone-a-seen-from-b", {**spec1, "server_port": spec2["server_port"]})
    assert elsewhere.serial == first.serial and elsewhere.lock_key != first.lock_key
    with holding(first.lock_key, first.name):
        assert is_locked(first.lock_key) and not is_locked(second.lock_key)
        with holding(second.lock_key, second.name):
            assert is_locked(second.lock_key)
    elsewhere.client.disconnect(first.serial)  # server b is shared by the session's tests
    for device in (first, second, elsewhere):
        device.close()


def test_the_host_and_its_emulated_devices_share_one_lock(tmp_path):
    """They share the host's CPUs: an emulated run beside a host benchmark would disturb it."""
    receipt = tmp_path / "userland.json"  # what fetch_emulation_userland writes (paths only)
    receipt.write_text('{"python": "/usr/bin/python3", "qemu": "qemu-aarch64", "sysroot": "/"}')
    qemu = QemuDevice("qemu-x", {"cpu": "max", "userland": str(receipt)})
    key = LocalDevice("host").lock_key
    assert key == qemu.lock_key and qemu.emulated and not LocalDevice("host").emulated
    # emulated devices beside each other (their timings are never judged), never beside the
    # host's own job, in either order
    with holding(key, "qemu-x", shared=True):
        assert can_share(key) and is_locked(key)
        with holding(key, "qemu-y", shared=True):
            assert is_locked(key)
    with holding(key, "host"):
        assert not can_share(key)
    assert can_share(key) and not is_locked(key)


def test_the_lock_is_released_when_the_job_fails():
    with pytest.raises(RuntimeError), holding("test-release", "x"):
        assert is_locked("test-release")
        raise RuntimeError("the job failed")
    assert not is_locked("test-release")


HOLD_AS_A_JOB = (
    "import sys\n"
    "from mnnrepro.logs import log_to\n"
    "from mnnrepro.runs.device_lock import holding\n"
    "log_to(sys.argv[2])\n"  # what a rule script does first: the job is named by its log
    "with holding(sys.argv[1], 'phone-a'):\n"
    "    print('held', flush=True)\n"
    "    sys.stdin.readline()\n"
)


def test_a_job_waiting_for_a_held_device_says_who_holds_it_and_ends_at_its_limit(tmp_path, capsys):
    """Another job (a process that named itself by its log file, as every rule script does)
    holds the device: the waiting job prints the holder's job, working directory, process and
    since when before waiting (and again every report_s), and past wait_s ends with one line
    naming the config key and the holder. A device's entry sets the limit (`lock_wait_s`)."""
    import os
    import subprocess
    import sys

    from mnnrepro.devices.factory import make_device
    from mnnrepro.errors import ReproError

    key, job_log = "test-held-by-a-job", tmp_path / "logs/run_bench/exp/phone-a/m.log"
    job_log.parent.mkdir(parents=True)
    scripts = str(Path(__file__).resolve().parents[2] / "workflow" / "scripts")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_AS_A_JOB, key, str(job_log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": scripts},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ReproError) as err, holding(key, "phone-a", 1.0, report_s=0.3):
            pass
        said = capsys.readouterr().out.splitlines()
    finally:
        holder.communicate("release\n", timeout=60)
    who = f"{job_log} in {tmp_path} (process {holder.pid}, since "
    assert said and said[0].startswith("phone-a: waiting 0 s for the device, held by " + who)
    assert all(who in line for line in said)
    assert str(err.value).startswith("config key `devices.phone-a.lock_wait_s`: the device is")
    assert who in str(err.value)
    assert not is_locked(key)  # released by its holder, never taken by the waiting job
    spec = full_device_spec({"local": {}, "lock_wait_s": 600})
    assert make_device("host", spec).lock_wait_s == 600
    assert make_device("host", full_device_spec({"local": {}})).lock_wait_s is None
    with pytest.raises(KeyError, match="lock_wait_s"):  # filled by the plan, not the device
        make_device("host", {"local": spec["local"]})
