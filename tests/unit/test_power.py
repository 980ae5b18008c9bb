"""Energy per token: power readers, the sampler, and the per-phase arithmetic.

The RAPL counter here is a file the test writes (a test double of /sys/class/powercap: this
host has none); the phone's power-supply files go through a real adb server in
tests/workflow/test_workflow_adb.py."""

from __future__ import annotations

import time

import pytest

from mnnrepro.devices.local import LocalDevice
from mnnrepro.runs.power import (
    PowerReader,
    PowerSampler,
    RaplReader,
    battery_watts,
    phase_joules,
    rapl_reader,
)


def test_battery_power_is_current_times_voltage_whatever_the_sign():
    assert battery_watts("-850000\n", "4000000\n") == pytest.approx(3.4)
    assert battery_watts("850000", "4000000") == pytest.approx(3.4)
    assert battery_watts("", "4000000") is None
    assert battery_watts("850000", "0") is None


def test_rapl_counter_gives_power_between_reads_and_survives_a_wrap(tmp_path):
    energy = tmp_path / "energy_uj"
    energy.write_text("999000000")
    reader = RaplReader(str(energy), range_uj=1_000_000_000)
    assert reader() is None  # the first read only starts the clock
    reader.last = (time.monotonic() - 1.0, 999_000_000)
    energy.write_text("1000000")  # wrapped: 2 J later
    assert reader() == pytest.approx(2.0, rel=0.05)


def test_a_host_without_rapl_says_so(tmp_path):
    assert "no RAPL energy counter" in rapl_reader(str(tmp_path))
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "energy_uj").write_text("5")
    (zone / "max_energy_range_uj").write_text("100")
    assert isinstance(rapl_reader(str(tmp_path)), PowerReader)
    device = LocalDevice("host")
    try:
        reader = device.power_reader()
    finally:
        device.close()
    assert isinstance(reader, PowerReader) or "RAPL" in reader


def test_sampler_keeps_every_sample_while_the_command_runs():
    watts = iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0] * 100)
    with PowerSampler(PowerReader("test", lambda: next(watts)), 0.01) as sampler:
        time.sleep(0.1)
    record = sampler.record()
    assert len(record["samples"]) >= 3 and record["source"] == "test"
    assert record["mean_w"] == pytest.approx(
        sum(w for _, w in record["samples"]) / len(record["samples"])
    )
    times = [t for t, _ in record["samples"]]
    assert times == sorted(times) and times[-1] <= record["seconds"]


def test_phases_take_the_samples_of_their_own_window():
    # 10 s invocation: load/warm-up at 1 W, prefill (2 s) at 5 W, decode (3 s) at 2 W
    samples = [[t / 2, 1.0] for t in range(10)] + [[5.5, 5.0], [6.5, 5.0]]
    samples += [[7.5, 2.0], [8.5, 2.0], [9.5, 2.0]]
    power = {"seconds": 10.0, "samples": samples, "mean_w": 2.0}
    results = [
        {"phase": "prefill", "tokens": 100, "seconds": 2.0},
        {"phase": "decode", "tokens": 30, "seconds": 3.0},
    ]
    energy = phase_joules(power, results, 10.0)
    assert energy["decode"]["power_w"] == 2.0 and energy["decode"]["joules"] == 6.0
    assert energy["prefill"]["power_w"] == 5.0
    assert energy["prefill"]["joules_per_token"] == pytest.approx(0.1)
    assert energy["prefill"]["power_window"] == "phase"


def test_a_phase_without_a_sample_uses_the_invocation_mean_and_says_so():
    power = {"seconds": 10.0, "samples": [[1.0, 3.0]], "mean_w": 3.0}
    results = [{"phase": "decode", "tokens": 10, "seconds": 1.0}]
    energy = phase_joules(power, results, 10.0)
    assert energy["decode"]["power_window"] == "invocation"
    assert energy["decode"]["joules_per_token"] == pytest.approx(0.3)
    assert phase_joules({"mean_w": None, "samples": []}, results, 10.0) == {}


def test_a_reading_that_raises_is_counted_not_fatal():
    calls = iter(range(1000))

    def flaky():
        if next(calls) % 2:
            raise OSError("device lost")
        return 1.5

    with PowerSampler(PowerReader("test", flaky), 0.01) as sampler:
        time.sleep(0.1)
    record = sampler.record()
    assert record["samples"] and record["mean_w"] == 1.5
    assert record["failed_readings"] and "OSError: device lost" in record["failed_readings"][0]
