"""Which temperatures the thermal gate waits on.

A phone exposes many `/sys/class/thermal` zones that are not die temperatures: the battery,
the charger, PMIC and modem sensors, power-amplifier placeholders stuck at 127 or 255 °C,
battery-percentage "zones", negative or zero readings. Waiting until the hottest of *all*
zones is cool would wait out `bench.thermal_timeout_s` before every invocation. The gate
therefore waits on, in this order:

1. `bench.thermal_zones`, when configured: the zones (or Android HAL sensors, named
   `hal:<name>`) whose names match one of its shell-style patterns;
2. else the temperatures Android itself reports for CPU and skin (`dumpsys thermalservice`,
   "Current temperatures from HAL", types CPU and SKIN), where the device has them;
3. else the sysfs zones whose type does not name a non-die sensor (NOT_DIE).

In every case a reading that cannot be a die temperature (at or below 0 °C, or at or above
120 °C: the 127/255 °C placeholders) is ignored. A plausible zone above the limit is never
dropped, however steady it reads: a hot, steady sensor is exactly what the gate is for (an
invocation that starts while it is hot is recorded so, and the verdict says so:
`bench.hot_start`). What was ignored, and why, is recorded with every invocation; every zone's
value is recorded as it was, gated on or not.
"""

from __future__ import annotations

import fnmatch
import re

PLAUSIBLE_C = (0.0, 120.0)  # a die temperature lies strictly between these
# sensors that are not a CPU/SoC die or the skin: battery, charging, power management,
# radios and their amplifiers, the crystal oscillator, battery-current limiters, state of charge
NOT_DIE = re.compile(
    r"batt|charg|chg|pmic|pmi\d|bms|usb|modem|mdm|pa[_-]?therm|^pa\d|xo[_-]?therm|bcl|ibat|vbat|"
    r"vbus|wlan|wifi|flash|camera|ambient|^soc$|pm\d{3,}",
    re.IGNORECASE,
)
HAL_GATED_TYPES = {0: "CPU", 3: "SKIN"}  # android.os.Temperature TYPE_CPU, TYPE_SKIN


def named_temperatures(zones: dict[str, float], hal: dict[str, dict]) -> dict[str, float]:
    """Every temperature under the name it is recorded and matched by: the sysfs zones as
    they are, the HAL's as `hal:<name>`."""
    return {**zones, **{f"hal:{name}": t["c"] for name, t in hal.items()}}


def plausible(value: float) -> bool:
    low, high = PLAUSIBLE_C
    return low < value < high


def gate_temperatures(
    zones: dict[str, float], hal: dict[str, dict], patterns: list[str] | None = None
) -> tuple[dict[str, float], dict[str, str], str]:
    """(what the gate waits on: name -> °C, what it ignores: name -> why, the rule used).

    zones: sysfs zones as `thermal_zoneN:type` -> °C; hal: hal_temperatures()."""
    candidates = named_temperatures(zones, hal)
    ignored: dict[str, str] = {}
    if patterns:
        rule = f"bench.thermal_zones {patterns}"
        chosen = {
            name: value
            for name, value in candidates.items()
            if any(fnmatch.fnmatchcase(name, p) for p in patterns)
        }
    elif any(t["type"] in HAL_GATED_TYPES for t in hal.values()):
        rule = "Android's HAL temperatures of types CPU and SKIN"
        chosen = {f"hal:{name}": t["c"] for name, t in hal.items() if t["type"] in HAL_GATED_TYPES}
    else:
        rule = "sysfs zones that name a CPU/SoC die (not battery, charger, PMIC, modem, ...)"
        chosen = {}
        for name, value in zones.items():
            kind = name.split(":", 1)[-1]
            if NOT_DIE.search(kind):
                ignored[name] = f"type {kind!r} is not a die temperature"
            else:
                chosen[name] = value
    gated = {}
    for name, value in chosen.items():
        if plausible(value):
            gated[name] = value
        else:
            ignored[name] = f"reads {value:g} °C: not a die temperature"
    return gated, ignored, rule
