"""What a device can read of its power: a phone's battery current x voltage (power-supply
sysfs, read through adb), the host's RAPL package energy counter (/sys/class/powercap). A
device's `power_reader` returns one of these readers; runs/power.py samples it while an
invocation runs and turns the samples into joules per phase."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MICRO = 1e-6


@dataclass
class PowerReader:
    source: str  # what is read, e.g. "sysfs battery current_now x voltage_now"
    # watts now, or (watts, the device's CLOCK_BOOTTIME seconds at the reading); None: no
    # reading this time
    read: Callable[[], float | tuple[float, float] | None]


def battery_watts(current_text: str, voltage_text: str) -> float | None:
    """Power from power-supply sysfs `current_now` (µA; the sign says the direction and
    differs between vendors) and `voltage_now` (µV)."""
    try:
        current, voltage = int(current_text.strip()), int(voltage_text.strip())
    except ValueError:
        return None
    return abs(current) * MICRO * voltage * MICRO if voltage > 0 else None


class RaplReader:
    """Package power from a RAPL energy counter (µJ, wrapping at max_energy_range_uj)."""

    def __init__(self, energy_file: str, range_uj: int):
        self.energy_file, self.range_uj = energy_file, range_uj
        self.last: tuple[float, int] | None = None

    def __call__(self) -> float | None:
        try:
            with open(self.energy_file, encoding="ascii") as fh:
                uj = int(fh.read())
        except (OSError, ValueError):
            return None
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        last, self.last = self.last, (now, uj)
        if last is None or now <= last[0]:
            return None
        delta = (uj - last[1]) % self.range_uj if self.range_uj else uj - last[1]
        # the mean power since the last reading, stamped at the middle of that interval
        return delta * MICRO / (now - last[0]), (now + last[0]) / 2


def rapl_reader(root: str = "/sys/class/powercap") -> PowerReader | str:
    """The host's RAPL package-0 reader, or why there is none."""
    zone = Path(root) / "intel-rapl:0"
    energy = zone / "energy_uj"
    if not energy.exists():
        return f"no RAPL energy counter ({energy} does not exist)"
    try:
        energy.read_text(encoding="ascii")
        range_uj = int((zone / "max_energy_range_uj").read_text(encoding="ascii"))
    except (OSError, ValueError) as err:
        return f"RAPL energy counter {energy} not readable ({err.__class__.__name__})"
    return PowerReader(f"RAPL {energy}", RaplReader(str(energy), range_uj))
