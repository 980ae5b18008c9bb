"""Energy per token: power readers, the sampler, and the per-phase arithmetic.

The RAPL counter here is a file the test writes (a test double of /sys/class/powercap: this
host has none); the phone's power-supply files go through a real adb server in
tests/workflow/test_workflow_adb.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mnnrepro.devices.local import LocalDevice
from mnnrepro.devices.power import PowerReader, RaplReader, battery_watts, rapl_reader
from mnnrepro.runs.power import PowerSampler, phase_joules


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
    before = time.clock_gettime(time.CLOCK_BOOTTIME) - 1.0
    reader.last = (before, 999_000_000)
    energy.write_text("1000000")  # wrapped: 2 J later
    watts, clock = reader()
    assert watts == pytest.approx(2.0, rel=0.05)
    # stamped on the host's boot-time clock, at the middle of the interval it averages
    assert before < clock < time.clock_gettime(time.CLOCK_BOOTTIME)
    assert clock == pytest.approx((reader.last[0] + before) / 2)


def test_samples_keep_the_device_clock_a_reader_gives():
    readings = iter([(1.0, 500.0), 2.0, (3.0, 502.0)])
    reader = PowerReader("test", lambda: next(readings, None))
    deadline = time.monotonic() + 30  # a sampler that stops sampling fails, never hangs
    with PowerSampler(reader, 0.01) as sampler:
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    samples = sampler.record()["samples"]
    assert [s[1:] for s in samples[:3]] == [[1.0, 500.0], [2.0], [3.0, 502.0]]
    assert sampler.record()["mean_w"] == pytest.approx(2.0)


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
    # this host's own answer, decided by what its powercap tree offers
    host_counter = Path("/sys/class/powercap/intel-rapl:0/energy_uj")
    try:
        readable = bool(host_counter.read_text(encoding="ascii").strip())
    except OSError:
        readable = False
    if readable:
        assert isinstance(reader, PowerReader) and str(host_counter) in reader.source
    else:
        assert isinstance(reader, str) and str(host_counter) in reader


def test_sampler_keeps_every_sample_while_the_command_runs():
    watts = iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0] * 100)
    with PowerSampler(PowerReader("test", lambda: next(watts)), 0.01) as sampler:
        deadline = time.monotonic() + 60  # samples, not a time: a busy host may run it late
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    record = sampler.record()
    assert len(record["samples"]) >= 3 and record["source"] == "test"
    assert record["mean_w"] == pytest.approx(
        sum(s[1] for s in record["samples"]) / len(record["samples"])
    )
    times = [s[0] for s in record["samples"]]
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
    assert energy["prefill"]["power_window"] == "inferred"


def test_recorded_phase_windows_leave_the_teardown_out_of_decode():
    """The runner recorded prefill [100, 102] and decode [102, 105] on the device's clock; the
    process then ran 3 s more (teardown, at 9 W). Inferred from the end, decode would take the
    teardown's samples; the recorded window does not."""
    samples = [[t - 95.0, 1.0, t] for t in (96.0, 97.0, 98.0, 99.0)]
    samples += [[5.5, 5.0, 100.5], [6.5, 5.0, 101.5]]
    samples += [[7.5, 2.0, 102.5], [8.5, 2.0, 103.5], [9.5, 2.0, 104.5]]
    samples += [[10.5, 9.0, 105.5], [11.5, 9.0, 106.5], [12.5, 9.0, 107.5]]
    power = {"seconds": 13.0, "samples": samples, "mean_w": 4.0}
    results = [
        {"phase": "prefill", "tokens": 100, "seconds": 2.0},
        {"phase": "decode", "tokens": 30, "seconds": 3.0},
    ]
    clock = {"clock": "CLOCK_BOOTTIME", "prefill": [100.0, 102.0], "decode": [102.0, 105.0]}
    recorded = phase_joules(power, results, 13.0, clock)
    assert recorded["decode"]["power_w"] == 2.0 and recorded["prefill"]["power_w"] == 5.0
    assert {e["power_window"] for e in recorded.values()} == {"recorded"}
    inferred = phase_joules(power, results, 13.0)
    assert inferred["decode"]["power_w"] == 9.0  # the teardown, which is why windows are kept
    assert inferred["decode"]["power_window"] == "inferred"
    # samples without the device's clock cannot use the recorded window
    unclocked = {**power, "samples": [s[:2] for s in samples]}
    assert phase_joules(unclocked, results, 13.0, clock)["decode"]["power_window"] == "inferred"


def test_a_phase_without_a_sample_uses_the_invocation_mean_and_says_so():
    power = {"seconds": 10.0, "samples": [[1.0, 3.0]], "mean_w": 3.0}
    results = [{"phase": "decode", "tokens": 10, "seconds": 1.0}]
    energy = phase_joules(power, results, 10.0)
    assert energy["decode"]["power_window"] == "invocation mean (no sample in the inferred window)"
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


def test_the_report_counts_windows_fallbacks_and_charging_per_variant():
    import pandas as pd

    from mnnrepro.analysis.energy import energy_conditions
    from mnnrepro.analysis.explaining import energy_flags

    rows = []
    for block, (window, charging) in enumerate(
        [("recorded", False), ("inferred", True), ("invocation mean (no sample)", True)]
    ):
        for phase in ("prefill", "decode"):
            rows.append(
                {
                    "device": "phone",
                    "variant": "on",
                    "block": block,
                    "phase": phase,
                    "power_window": window,
                    "charging": charging,
                    "emulated": False,
                }
            )
    conditions = energy_conditions(pd.DataFrame(rows))
    assert conditions == [
        {
            "device": "phone",
            "variant": "on",
            "recorded": 2,
            "inferred": 2,
            "invocation_mean": 2,
            "charging_invocations": 2,
        }
    ]
    text = "\n".join(energy_flags({"energy_conditions": conditions}))
    assert "unvalidated" in text
    assert "2 fell back to the invocation's mean power" in text
    assert "charging during 2 invocations" in text
    quiet = [{**conditions[0], "invocation_mean": 0, "charging_invocations": 0}]
    assert "fell back" not in "\n".join(energy_flags({"energy_conditions": quiet}))


def test_a_vision_step_integrates_its_phases_over_its_own_samples():
    """A built engine's vision phase runs as its own command after llm_bench (runs/benchmark.py
    vision_step), sampled on its own: prefill and decode keep the text command's stretch (at
    5 W and 2 W), the image questions take the vision command's (8 W); were the two mixed, the
    text phases would be inferred from the end of a stretch that ends in the vision step."""
    from mnnrepro.analysis.tables import stretch_joules

    text = [[5.5, 5.0], [6.5, 5.0], [7.5, 2.0], [8.5, 2.0], [9.5, 2.0]]
    vision = [[t - 199.0, 8.0, t] for t in (200.5, 201.0, 201.5)]
    record = {
        "wall_s": 10.0,
        "power": {"seconds": 10.0, "samples": text, "mean_w": 3.0},
        "results": [
            {"phase": "prefill", "tokens": 100, "seconds": 2.0},
            {"phase": "decode", "tokens": 30, "seconds": 3.0},
            {"phase": "vision", "tokens": 64, "seconds": 0.5},
            {"phase": "image_prefill", "tokens": 80, "seconds": 0.5},
            {"phase": "first_token", "tokens": 1, "seconds": 1.0},
        ],
        "vision_step": {
            "tool": {"wall_s": 3.0},
            "power": {"seconds": 3.0, "samples": vision, "mean_w": 8.0},
            "phase_clock": {
                "clock": "CLOCK_BOOTTIME",
                **{p: [200.0, 202.0] for p in ("vision", "image_prefill", "first_token")},
            },
        },
    }
    energy = stretch_joules(record)
    assert energy["prefill"]["power_w"] == 5.0 and energy["decode"]["power_w"] == 2.0
    assert {energy[p]["power_w"] for p in ("vision", "image_prefill", "first_token")} == {8.0}
    assert energy["vision"]["power_window"] == "recorded"
    assert energy["first_token"]["joules"] == 8.0
