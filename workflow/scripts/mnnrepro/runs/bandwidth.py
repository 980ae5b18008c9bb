"""The decode ceiling's memory read bandwidth, measured on a device with bandwidth_probe.

The probe (build/bandwidth_probe/) is built with the toolchain of each engine that runs on the
device, staged there by hash, and run once after the quiet gate with `bandwidth.repetitions`
reads of a `bandwidth.buffer_mib` buffer (much larger than any last-level cache) on
every thread count a variant uses and on `bandwidth.threads` threads (0: every core of the
device). Every sample is kept, with the probe's own output, so the ceiling can be recomputed
from the record alone.

On a device whose facts list each core's maximum frequency (a phone: big, mid and little
cores), a run at t threads is pinned with `taskset` to the t fastest cores, where the engine's
threads run (MNN places its threads on the big cores first), so that the ceiling comes from
the cores the benchmark uses; the record says which cores (`cores`, null where unpinned)."""

from __future__ import annotations

import json
import logging
import statistics
import time
from pathlib import Path

from mnnrepro.devices.base import Device
from mnnrepro.errors import ReproError
from mnnrepro.files import read_json, sha256_file
from mnnrepro.runs.benchmark import quiet_gate
from mnnrepro.runs.on_device import on_device
from mnnrepro.sections import Bandwidth, Bench

log = logging.getLogger(__name__)

PROBE = "bandwidth_probe"


class ProbeError(ReproError, RuntimeError):
    pass


def parse_probe_output(text: str) -> list[dict]:
    """The probe's JSON lines -> samples; anything else in its output is an error."""
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
            valid = sample["seconds"] > 0 and sample["bytes"] > 0 and sample["gb_per_s"] > 0
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            raise ProbeError(f"bandwidth probe output line {number} is not a sample: {line!r}")
        samples.append(sample)
    return samples


def probe_threads(setting: int, facts: dict) -> int:
    """`bandwidth.threads`, where 0 means every core the device facts list."""
    return setting or int(facts.get("cpu_count") or 1)


def stage_probe(device: Device, probe_dir: str, digest: str) -> str:
    """Stage one built probe (sha256 digest) on the device by hash and verify it there;
    returns its device path."""
    staged = device.stage(probe_dir, f"tools/bandwidth-probe-{digest[:12]}")
    remote = f"{staged}/{PROBE}"
    device.verify({remote: digest})
    return remote


def fastest_cores(facts: dict, threads: int) -> list[int] | None:
    """The `threads` cores with the highest maximum frequency (ties: the lower number), or
    None where the facts do not list frequencies per core, or there are not that many."""
    freqs = {
        int(name.removeprefix("cpu")): khz
        for name, khz in (facts.get("cpu_max_freq_khz") or {}).items()
        if name.removeprefix("cpu").isdigit()
    }
    if len(freqs) < threads or len(set(freqs.values())) < 2:
        return None  # unknown, or all cores alike: nothing to choose
    return sorted(sorted(freqs, key=lambda core: (-freqs[core], core))[:threads])


def measure_probe(
    device: Device, remote: str, settings: Bandwidth, threads: int, cores: list[int] | None = None
) -> dict:
    """Run the staged probe at one thread count (pinned to `cores` when given) and return its
    samples."""
    argv = [remote, str(settings.buffer_mib), str(threads), str(settings.repetitions)]
    if cores:
        argv = ["taskset", format(sum(1 << c for c in cores), "x"), *argv]
    started = time.time()
    result = device.run(argv, timeout=settings.timeout_s)
    if not result.ok:
        why = "timed out" if result.returncode is None else f"exit code {result.returncode}"
        raise ProbeError(
            f"bandwidth probe on {device.name} failed ({why}): {result.stderr.strip()[-2000:]}"
        )
    samples = parse_probe_output(result.stdout)
    if len(samples) != settings.repetitions:
        raise ProbeError(
            f"bandwidth probe on {device.name} gave {len(samples)} samples, "
            f"asked for {settings.repetitions}"
        )
    rates = [s["gb_per_s"] for s in samples]
    log.info("%s: read bandwidth %s GB/s", device.name, ", ".join(f"{r:.2f}" for r in rates))
    return {
        "argv": argv,
        "cores": cores,
        "started_unix": started,
        "wall_s": result.seconds,
        "other_load": result.other_load,
        "samples": samples,
        "stdout": result.stdout,
        "median_gb_per_s": statistics.median(rates),
        "max_gb_per_s": max(rates),
    }


def measure_bandwidth(
    device: Device,
    facts: dict,
    probes: dict[str, dict],
    settings: Bandwidth,
    bench: Bench,
    variant_threads: list[int] = (),
) -> dict:
    """probes: engine name -> {"record": path of its build record, "dir": its directory}.
    Each distinct probe binary (engines of one platform share it) is staged once and runs at
    every thread count a variant uses (the bandwidth its decode can draw on) and at
    `bandwidth.threads` (0: every core, what the device allows)."""
    all_cores = probe_threads(settings.threads, facts)
    counts = sorted({*variant_threads, all_cores})
    measurements, engines = [], {}
    for engine, probe in sorted(probes.items()):
        digest = sha256_file(Path(probe["dir"]) / PROBE)
        engines[engine] = digest
        if any(m["probe_sha256"] == digest for m in measurements):
            continue  # the same binary as another engine's: measured once
        record = read_json(probe["record"])
        remote = stage_probe(device, probe["dir"], digest)
        for threads in counts:
            gate = quiet_gate(device, bench)
            cores = fastest_cores(facts, threads) if threads < all_cores else None
            measurements.append(
                {
                    "probe_sha256": digest,
                    **measure_probe(device, remote, settings, threads, cores),
                    "threads": threads,
                    "platform": record["platform"],
                    "compiler": record["compiler"],
                    "quiet_gate": gate,
                }
            )
    return {
        "device": device.name,
        "emulated": device.emulated,
        "buffer_mib": settings.buffer_mib,
        "all_cores_threads": all_cores,
        "repetitions": settings.repetitions,
        "measurements": measurements,
        "engines": engines,
    }


def bandwidth_job(job) -> dict:
    """Rule measure_bandwidth: each engine's probe on the device, or on an emulated device
    (whose memory is the host's, seen through QEMU) a record that none was measured."""
    probes = {
        engine: {"record": record, "dir": directory}
        for engine, record, directory in zip(
            job.params.engine_names, job.input.records, job.input.probes, strict=True
        )
    }
    if not probes:
        return {
            "device": job.wildcards.device,
            "emulated": True,
            "skipped": "emulated device: no bandwidth measured",
            "measurements": [],
            "engines": {},
        }
    with on_device(job.wildcards.device, job.params.device, "the bandwidth probe") as device:
        return measure_bandwidth(
            device,
            read_json(job.input.facts),
            probes,
            Bandwidth.of(job.params.bandwidth),
            Bench.of(job.params.bench),
            job.params.variant_threads,
        )
