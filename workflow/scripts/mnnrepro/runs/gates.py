"""The gates every benchmark invocation waits at: a cool device (thermal_gate) and a quiet
one (quiet_gate), each bounded by its timeout and recorded with what it saw."""

from __future__ import annotations

import logging
import time

from mnnrepro.devices.base import Device
from mnnrepro.logs import REPORT_S, say
from mnnrepro.runs.thermal import gate_temperatures, named_temperatures
from mnnrepro.sections import Bench

log = logging.getLogger(__name__)


def thermal_gate(device: Device, bench: Bench) -> dict:
    """Wait until the device is cool (status NONE, the hottest gated temperature <=
    max_temp_c), bounded by thermal_timeout_s. Which temperatures are gated on, and which are
    ignored and why: runs/thermal.py."""
    limit = bench.max_temp_c
    start = next_report = time.monotonic()
    deadline = start + bench.thermal_timeout_s
    while True:
        temps, (status, hal) = device.thermal(), device.thermal_service()
        gated, ignored, rule = gate_temperatures(temps, hal, bench.thermal_zones)
        hottest = max(gated.values()) if gated else None
        cool = status in (None, 0) and (limit is None or hottest is None or hottest <= limit)
        if cool or time.monotonic() >= deadline:
            return {
                "waited_s": round(time.monotonic() - start, 1),
                "cool": cool,
                "thermal_status": status,
                "temps_c": named_temperatures(temps, hal),
                "gated_on": sorted(gated),
                "hottest_gated_c": hottest,
                "ignored": ignored,
                "rule": rule,
            }
        hot = ", ".join(f"{n} {v:g}" for n, v in sorted(gated.items()) if limit and v > limit)
        text = (
            f"{device.name}: waiting {time.monotonic() - start:.0f} s of "
            f"{bench.thermal_timeout_s:g} s (bench.thermal_timeout_s) to cool "
            f"to {limit} C: thermal status {status}, hottest {hottest} C ({hot or 'none above'})"
        )
        if time.monotonic() >= next_report:  # on the terminal too, at once and every 30 s
            say(text)
            next_report = time.monotonic() + REPORT_S
        else:
            log.info("%s", text)
        time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))


def quiet_gate(device: Device, bench: Bench) -> dict:
    """Wait until other work keeps at most `max_other_load` CPUs busy, bounded by
    `quiet_timeout_s`; the load is sampled over `quiet_window_s` while nothing of ours runs
    (a phone's from its own /proc/stat over adb). Devices that cannot measure it pass with
    quiet None; an emulated device measures it once and never waits (its timings are
    recorded, never judged, and emulated devices run beside each other)."""
    limit = bench.max_other_load
    start = time.monotonic()
    deadline = start + (0 if device.emulated else bench.quiet_timeout_s)
    while True:
        load = None if limit is None else device.other_load_now(bench.quiet_window_s)
        quiet = None if load is None else load <= limit
        if quiet is not False or time.monotonic() >= deadline:
            return {"waited_s": round(time.monotonic() - start, 1), "quiet": quiet, "load": load}
        log.info("waiting for a quiet %s: other work keeps %.2f CPUs busy", device.name, load)
        time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
