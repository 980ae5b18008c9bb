"""The decode ceiling's bandwidth probe: built for real with the engine's toolchain (CMake and
this host's compiler for the prebuilt engine; the cross compiler for a linux-arm64 build) and
run for real on the host as a `local` device. No number is asserted beyond being a positive
measurement: the host is shared."""

from __future__ import annotations

import io
import shutil
import subprocess

import pytest
from conftest import full_bench, section

from mnnrepro.devices.local import LocalDevice
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.runs.bandwidth import (
    ProbeError,
    measure_bandwidth,
    parse_probe_output,
    probe_threads,
)
from mnnrepro.toolchain.tools import build_bandwidth_probe

# its module-scoped fixture is built once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("host-probe")

SETTINGS = section("bandwidth", buffer_mib=32, threads=0, repetitions=4, timeout_s=60)
QUIET = full_bench(max_other_load=None)  # the whole bench, the quiet gate off


@pytest.fixture(scope="module")
def host_probe(tmp_path_factory):
    work = tmp_path_factory.mktemp("probe")
    record = build_bandwidth_probe(
        EngineRecord.of({"engine": "mnn-pypi", "kind": "prebuilt"}),
        str(work / "build"),
        str(work / "out"),
        io.StringIO(),
    )
    (work / "record.json").write_text(__import__("json").dumps(record))
    return work, record


@pytest.mark.slow
def test_probe_is_built_with_the_hosts_compiler_for_the_prebuilt_engine(host_probe):
    _, record = host_probe
    assert record["platform"] == "host" and record["tool"] == "bandwidth_probe"
    assert record["compiler"]["path"] and record["files"][0]["path"] == "bandwidth_probe"
    assert set(record["source_sha256"]) == {"CMakeLists.txt", "bandwidth_probe.c"}


@pytest.mark.slow
def test_probe_runs_on_the_host_and_every_sample_is_kept(host_probe):
    work, _ = host_probe
    device = LocalDevice("host")
    try:
        facts = {"cpu_count": 2}
        probes = {"mnn-pypi": {"record": str(work / "record.json"), "dir": str(work / "out")}}
        result = measure_bandwidth(device, facts, probes, SETTINGS, QUIET, variant_threads=[1])
    finally:
        device.close()
    # at the variants' thread count (1) and on every core (2), one probe binary
    assert [m["threads"] for m in result["measurements"]] == [1, 2]
    assert result["all_cores_threads"] == 2
    digests = {m["probe_sha256"] for m in result["measurements"]}
    assert result["engines"] == {"mnn-pypi": digests.pop()} and not digests
    for measured in result["measurements"]:
        samples = measured["samples"]
        assert len(samples) == SETTINGS.repetitions
        assert all(s["gb_per_s"] > 0 and s["bytes"] == 32 * 2**20 for s in samples)
        assert measured["stdout"].count("\n") == SETTINGS.repetitions  # its own output
        assert measured["median_gb_per_s"] > 0


@pytest.mark.slow
def test_probe_refuses_bad_arguments(host_probe):
    work, _ = host_probe
    proc = subprocess.run(
        [str(work / "out" / "bandwidth_probe"), "0", "1", "1"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "need buffer MiB >= 1" in proc.stderr


@pytest.mark.skipif(
    not shutil.which("aarch64-linux-gnu-gcc"),
    reason="Debian's aarch64 cross compiler (installed by .ci/run) is missing",
)
@pytest.mark.slow
def test_probe_for_a_linux_arm64_engine_is_cross_compiled(tmp_path):
    record = build_bandwidth_probe(
        EngineRecord.of({"engine": "sme2-on", "kind": "build", "platform": "linux-arm64"}),
        str(tmp_path / "build"),
        str(tmp_path / "out"),
        io.StringIO(),
    )
    assert "aarch64-linux-gnu-gcc" in record["compiler"]["path"]
    assert (tmp_path / "out" / "bandwidth_probe").read_bytes()[18] == 0xB7  # EM_AARCH64


def test_probe_output_that_is_not_a_sample_is_refused():
    good = '{"rep": 0, "bytes": 1024, "seconds": 0.5, "gb_per_s": 2e-06, "checksum": 1}\n'
    assert parse_probe_output(good)[0]["gb_per_s"] == 2e-06
    for bad in ("Segmentation fault", '{"rep": 0, "bytes": 1024, "seconds": 0, "gb_per_s": 1}'):
        with pytest.raises(ProbeError, match="line 1 is not a sample"):
            parse_probe_output(bad)


def test_zero_threads_means_every_core_of_the_device():
    assert probe_threads(0, {"cpu_count": 8}) == 8
    assert probe_threads(3, {"cpu_count": 8}) == 3


def test_the_probe_is_pinned_to_the_fastest_cores_where_the_facts_tell_them():
    from mnnrepro.runs.bandwidth import fastest_cores

    # a 1 + 3 + 4 phone: cpu7 the prime core, cpu4-6 big, cpu0-3 little
    freqs = {f"cpu{i}": 2_000_000 for i in range(4)}
    freqs |= {f"cpu{i}": 3_300_000 for i in (4, 5, 6)} | {"cpu7": 4_200_000}
    facts = {"cpu_max_freq_khz": freqs}
    assert fastest_cores(facts, 1) == [7]
    assert fastest_cores(facts, 4) == [4, 5, 6, 7]
    assert fastest_cores(facts, 6) == [0, 1, 4, 5, 6, 7]
    assert fastest_cores({"cpu_max_freq_khz": {"cpu0": 1, "cpu1": 1}}, 1) is None  # all alike
    assert fastest_cores({}, 1) is None and fastest_cores(facts, 9) is None
