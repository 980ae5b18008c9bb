"""Which temperatures the thermal gate waits on (runs/thermal.py), on constructed readings."""

from __future__ import annotations

import pytest
from conftest import full_bench

from mnnrepro.devices.android import hal_temperatures
from mnnrepro.runs.thermal import gate_temperatures

DUMPSYS = """IsStatusOverride: false
Thermal Status: 1
Cached temperatures:
\tTemperature{mValue=99.0, mType=0, mName=stale, mStatus=0}
HAL Ready: true
Current temperatures from HAL:
\tTemperature{mValue=43.2, mType=0, mName=cpu-1-0-usr, mStatus=0}
\tTemperature{mValue=NaN, mType=0, mName=cpu-9, mStatus=0}
\tTemperature{mValue=30.1, mType=2, mName=battery, mStatus=0}
\tTemperature{mValue=34.0, mType=3, mName=skin, mStatus=0}
Current cooling devices from HAL:
\tCoolingDevice{mValue=0, mType=2, mName=cpu-cluster0}
"""


def test_the_hal_section_is_read_and_the_cached_one_is_not():
    assert hal_temperatures(DUMPSYS) == {
        "cpu-1-0-usr": {"c": 43.2, "type": 0},
        "battery": {"c": 30.1, "type": 2},
        "skin": {"c": 34.0, "type": 3},
    }
    assert hal_temperatures("Thermal Status: 0\n") == {}


def test_hal_cpu_and_skin_win_over_the_zones():
    zones = {"thermal_zone0:cpu-0": 50.0, "thermal_zone1:charger": 60.0}
    gated, ignored, rule = gate_temperatures(zones, hal_temperatures(DUMPSYS))
    assert gated == {"hal:cpu-1-0-usr": 43.2, "hal:skin": 34.0} and ignored == {}
    assert "HAL" in rule


@pytest.mark.parametrize(
    ("kind", "value", "gated"),
    [
        ("cpu-0-0", 41.0, True),
        ("mtktscpu", 41.0, True),
        ("soc_max", 41.0, True),
        ("tsens_tz_sensor3", 41.0, True),
        ("battery", 31.0, False),
        ("charger-therm", 52.0, False),
        ("pa-therm0", 41.0, False),
        ("pm8550b-tz", 41.0, False),
        ("soc", 87.0, False),
        ("cpu-0-0", 127.0, False),
        ("cpu-0-0", 0.0, False),
        ("cpu-0-0", -5.0, False),
    ],
)
def test_without_hal_only_plausible_die_zones_are_gated(kind, value, gated):
    name = f"thermal_zone0:{kind}"
    chosen, ignored, _ = gate_temperatures({name: value}, {})
    assert (name in chosen) is gated
    assert (name in ignored) is not gated


def test_configured_patterns_choose_zones_and_hal_sensors_but_never_implausible_ones():
    zones = {"thermal_zone0:cpu-0": 40.0, "thermal_zone1:pa-therm0": 127.0}
    hal = {"skin": {"c": 35.0, "type": 3}}
    gated, ignored, rule = gate_temperatures(zones, hal, ["*:cpu-*", "*:pa-*", "hal:skin"])
    assert gated == {"thermal_zone0:cpu-0": 40.0, "hal:skin": 35.0}
    assert ignored == {"thermal_zone1:pa-therm0": "reads 127 °C: not a die temperature"}
    assert "bench.thermal_zones" in rule


def test_a_hot_zone_that_never_moves_is_waited_on_and_the_invocation_recorded_hot():
    """A steady, plausible hot reading is a hot die, not a placeholder: the gate waits on it
    until its timeout and records the invocation as started hot. (A stand-in device that
    reads a hot die: no device here runs hot on demand.)"""
    from mnnrepro.runs.gates import thermal_gate

    class SteadyHotPhone:
        name = "steady"

        def thermal(self):
            return {"thermal_zone0:cpu-0": 50.0, "thermal_zone1:cpu-1": 30.0}

        def thermal_service(self):
            return None, {}

    gate = thermal_gate(SteadyHotPhone(), full_bench(**{"max_temp_c": 45, "thermal_timeout_s": 0}))
    assert gate["cool"] is False and gate["hottest_gated_c"] == 50.0
    assert "thermal_zone0:cpu-0" in gate["gated_on"] and gate["ignored"] == {}
