"""Energy per token: power sampled while an invocation runs.

A device gives a power reader (devices/*.py `power_reader`): a phone's battery current x
voltage from its power-supply sysfs, read through adb; the host's RAPL package energy counter
(/sys/class/powercap). A `PowerSampler` thread calls it every `bench.power_sample_s` seconds
while the invocation runs and keeps every sample, each stamped with the seconds since the
sampler started and, where the reader can tell, the device's own CLOCK_BOOTTIME (a phone's
/proc/uptime read in the same adb command as the current; the host's clock).

Each phase's joules are its mean power times its seconds, the mean taken over the samples
inside the phase's window (`power_window` in bench.csv says which window was used):
* `recorded`: the runner recorded when the phase started and ended on the device's clock
  (`phase_clock`), and the samples carry that clock;
* `inferred`: no recorded window (llm_bench prints none): the phases of one invocation run
  last and back to back (load, warm-up, prefill, decode, exit), so decode is taken as the last
  `decode seconds` of the sampled stretch and prefill as the stretch before it (the process's
  teardown then counts as decode);
* `invocation mean (...)`: no sample inside the window: the invocation's mean power, said so.
Energy figures are unvalidated until checked against an external meter. On a phone, measure
on battery (adb over Wi-Fi, or charging disabled): on USB power the battery current is the
charger's balance, not what the SoC draws; each raw record keeps the charging state."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from mnnrepro.devices.power import PowerReader


@dataclass
class PowerSampler:
    reader: PowerReader
    interval_s: float
    # [seconds since start, watts] or [seconds since start, watts, device clock seconds]
    samples: list[list[float]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # readings that raised (e.g. adb lost)

    def __enter__(self) -> PowerSampler:
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                watts = self.reader.read()
            except Exception as err:  # a lost reading must not end the run
                self.failed.append(f"{type(err).__name__}: {err}"[:200])
                watts = None
            clock = None
            if isinstance(watts, tuple):
                watts, clock = watts
            if watts is not None:
                sample = [round(time.monotonic() - self._start, 4), round(watts, 4)]
                self.samples.append(sample if clock is None else [*sample, round(clock, 4)])
            self._stop.wait(self.interval_s)

    def __exit__(self, *exc) -> None:
        self.seconds = time.monotonic() - self._start
        self._stop.set()
        self._thread.join(timeout=30)

    def record(self) -> dict:
        watts = [s[1] for s in self.samples]
        return {
            "source": self.reader.source,
            "interval_s": self.interval_s,
            "seconds": round(self.seconds, 4),
            "samples": self.samples,
            "mean_w": sum(watts) / len(watts) if watts else None,
            "failed_readings": self.failed[:5]
            + ([f"... {len(self.failed)} in all"] * (len(self.failed) > 5)),
        }


def unavailable(reason: str) -> dict:
    return {"source": None, "unavailable": reason, "samples": [], "mean_w": None}


RECORDED, INFERRED = "recorded", "inferred"


def phase_windows(
    power: dict, results: list[dict], wall_s: float | None, phase_clock: dict | None
) -> tuple[str, dict[str, tuple[float, float]], int]:
    """Which window each phase's power comes from: (kind, phase -> (start, end), the index
    of the sample field the window is on: 2 the device clock, 0 seconds since the start)."""
    samples = power.get("samples") or []
    clocked = bool(samples) and all(len(s) >= 3 for s in samples)
    if phase_clock and clocked and all(r["phase"] in phase_clock for r in results):
        return RECORDED, {r["phase"]: tuple(phase_clock[r["phase"]]) for r in results}, 2
    end = power.get("seconds") or wall_s or 0.0
    windows, window_end = {}, end
    for r in sorted(results, key=lambda r: r["phase"] != "decode"):  # decode first: it ends last
        windows[r["phase"]] = (window_end - r["seconds"], window_end)
        window_end -= r["seconds"]
    return INFERRED, windows, 0


def phase_joules(
    power: dict, results: list[dict], wall_s: float | None, phase_clock: dict | None = None
) -> dict[str, dict]:
    """Per phase: joules, joules per token, and which window the mean power came from (see
    the module's docstring)."""
    if not power or power.get("mean_w") is None:
        return {}
    kind, windows, at = phase_windows(power, results, wall_s, phase_clock)
    out = {}
    for r in results:
        start, end = windows[r["phase"]]
        inside = [s[1] for s in power["samples"] if start <= s[at] <= end]
        watts = sum(inside) / len(inside) if inside else power["mean_w"]
        joules = watts * r["seconds"]
        out[r["phase"]] = {
            "power_w": watts,
            "joules": joules,
            "joules_per_token": joules / r["tokens"],
            "power_window": kind if inside else f"invocation mean (no sample in the {kind} window)",
        }
    return out
