"""The phone tier: is this phone ready for the paper's run? (Never timed on a real phone: no
phone here; on the loopback phone it takes seconds.)

By default these run against the loopback phone (tests/loopback_adbd.py: a real adb server, a
phone's layout), so the tier itself is tested. On a real phone, before a long run:

    pytest -m device --phone-serial <serial from `adb devices`> \\
        --phone-engine results/engines/<sme2-on build>/ --phone-model results/models/<tiny>/mnn

(`--phone-engine` may be given once per built engine; `--phone-model`: any small exported
model, e.g. the quickstart's or a `synthetic: {shape: tiny}` model of your config.) On the
loopback phone the engine is the prebuilt `mnn` wheel and the model the session's tiny one;
the run-time mask line exists only in MNN_PIPELINE_PROFILE builds, so there it checks the
feature line alone. The limits a phone must meet are the experiment's own (`--phone-config`,
config/paper.yaml by default: `bench.max_temp_c`, `bench.max_other_load`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import (
    PREBUILT_ENGINE,
    full_adb_spec,
    full_bench,
    full_variant,
    start_loopback_phone,
    stop_loopback_phone,
)

from mnnrepro.devices.adb import AdbDevice
from mnnrepro.devices.power import PowerReader
from mnnrepro.engines.device_io import supported_features
from mnnrepro.runs.benchmark import thermal_gate
from mnnrepro.runs.staging import push_receipt
from mnnrepro.runs.thermal import gate_temperatures, named_temperatures

pytestmark = [pytest.mark.device, pytest.mark.xdist_group("phone-tier")]


@pytest.fixture(scope="module")
def phone_spec(request, tmp_path_factory, adb_server_port):
    serial = request.config.getoption("--phone-serial")
    if serial:  # a real phone, through the adb server adb itself would use
        yield full_adb_spec(serial=serial, workdir="/data/local/tmp/mnn-repro-check")
        return
    cpuinfo = request.config.getoption("--phone-loopback-cpuinfo")
    phone, spec = start_loopback_phone(
        tmp_path_factory.mktemp("tier-phone"), adb_server_port, cpuinfo
    )
    yield spec
    stop_loopback_phone(phone, adb_server_port)


@pytest.fixture(scope="module")
def real_phone(request) -> bool:
    return bool(request.config.getoption("--phone-serial"))


@pytest.fixture(scope="module")
def limits(request) -> dict:
    """The experiment's thermal and load limits (its config, else the schema's defaults)."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    schema = yaml.safe_load((root / "workflow/schemas/config.schema.yaml").read_text())
    defaults = schema["properties"]["bench"]["properties"]
    bench = yaml.safe_load((root / request.config.getoption("--phone-config")).read_text())["bench"]
    return {k: bench.get(k, defaults[k]["default"]) for k in ("max_temp_c", "max_other_load")}


def engine_must_have_sme2(request, real_phone: bool) -> bool:
    """What the engine's feature line must say: on a real phone, what the phone is declared
    to be (--phone-sme2); on the loopback phone the engine runs on this host's CPU."""
    if real_phone:
        return request.config.getoption("--phone-sme2") == "yes"
    from mnnrepro.devices.base import _read, cpuinfo_summary

    return "sme2" in cpuinfo_summary(_read("/proc/cpuinfo"))["features"]


@pytest.fixture
def phone(phone_spec):
    device = AdbDevice("phone", phone_spec)
    yield device
    device.close()


def test_the_phone_says_what_it_is_and_has_sme2_on_every_core(phone, request):
    facts = phone.facts()
    for key in ("model", "soc_model", "fingerprint", "security_patch", "kernel", "abi"):
        print(f"{key}: {facts.get(key)}")
    assert facts["model"] and facts["fingerprint"] and facts["kernel"]
    assert facts["abi"] == "arm64-v8a"
    per_core = facts["cpu_features_per_core"]
    assert per_core and len(per_core) == facts["cpu_count"]
    expect = request.config.getoption("--phone-sme2")
    print(
        f"sme2 cores by cluster: {facts['sme2_cores_by_cluster']}; default streaming vector "
        f"length: {facts['sme_default_vector_length_bytes']} bytes; SME units: "
        f"{facts['sme_units']}"
    )
    assert facts["sme2"] is (expect == "yes"), (
        f"cores with sme2: {len(facts['sme2_cores'])} of {len(per_core)}"
        + ("" if expect == "yes" else " (a negative-control phone must have none)")
    )


def test_thermal_zones_are_readable_and_the_idle_phone_passes_the_gate(phone, limits):
    zones, hal = phone.thermal(), phone.hal_temperatures()
    gated, ignored, rule = gate_temperatures(zones, hal)
    print(f"gate rule: {rule}")
    for name, value in sorted(named_temperatures(zones, hal).items()):
        mark = "gated" if name in gated else ignored.get(name, "not gated")
        print(f"  {name}: {value:g} °C ({mark})")
    assert zones and gated, "no temperature the thermal gate could wait on"
    limit = limits["max_temp_c"]
    if limit is None:
        pytest.skip("the experiment sets no temperature limit (bench.max_temp_c: null)")
    gate = thermal_gate(phone, full_bench(**{"max_temp_c": limit, "thermal_timeout_s": 120}))
    assert gate["cool"], f"above {limit} °C after 2 minutes: {gate['hottest_gated_c']} °C"


def test_a_pushed_file_is_re_hashed_on_the_phone_and_a_changed_one_refused(phone, tmp_path):
    local = tmp_path / "check.bin"
    local.write_bytes(os.urandom(1 << 20))
    remote = phone.stage(str(local), "tier-check/check.bin")
    from mnnrepro.files import sha256_file

    phone.verify({remote: sha256_file(local)})
    assert phone.run(["sh", "-c", 'echo x >> "$1"', "sh", remote], timeout=30).ok  # quoted
    with pytest.raises(RuntimeError, match=r"check\.bin"):
        phone.verify({remote: sha256_file(local)})


def test_power_is_readable_and_the_charging_state_known(phone):
    reader = phone.power_reader()
    assert isinstance(reader, PowerReader), reader
    reading = reader.read()
    assert isinstance(reading, tuple) and reading[0] > 0  # watts, on the phone's clock
    battery = phone.battery()
    print(f"battery: {battery}")
    assert isinstance(battery["charging"], bool)


def test_background_load_and_screen_are_measured(phone, limits, real_phone):
    load = phone.other_load_now(0.5)
    during = phone.run_invocation(["sleep", "1"], timeout=30)
    print(f"other load while `sleep 1` ran: {during.other_load} CPUs")
    assert during.ok and during.other_load is not None and during.own_cpu_s is not None
    screen = phone.screen_state()
    print(f"other load: {load} CPUs; screen: {screen}")
    # a CPU count, give or take /proc/stat's clock ticks over the window
    assert load is not None and 0 <= load <= phone.facts()["cpu_count"] + 0.5
    assert screen and screen["wakefulness"] and screen["display"]
    if real_phone and limits["max_other_load"] is not None:  # the loopback phone's load is
        # this host's, which other tests move: the limit is a real phone's to meet
        assert load <= limits["max_other_load"], (
            f"the idle phone keeps {load} CPUs busy; the experiment allows "
            f"{limits['max_other_load']} (bench.max_other_load): stop what runs on it"
        )


def engines_to_run(request, tiny_model) -> list[dict]:
    """Per engine to try: its record, the directories to stage, its gate tool, the model."""
    import json

    if not request.config.getoption("--phone-serial"):
        return [
            {"record": PREBUILT_ENGINE, "dirs": {}, "tools": {}, "tool": None, "model": tiny_model}
        ]
    dirs, model = (
        request.config.getoption("--phone-engine"),
        request.config.getoption("--phone-model"),
    )
    assert dirs and model, "on a real phone, give --phone-engine DIR (each build) and --phone-model"
    out = []
    for engine in map(Path, dirs):  # results/engines/<key>/: build.json, bin/, gate-tool/
        record = json.loads((engine / "build.json").read_text())
        name = record["engine"]
        out.append(
            {
                "record": record,
                "dirs": {name: str(engine / "bin")},
                "tools": {name: str(engine / "gate-tool")},
                "tool": json.loads((engine / "gate-tool.json").read_text()),
                "model": model,
            }
        )
    return out


def test_each_engine_answers_a_short_prompt_and_prints_its_feature_line(
    phone, request, tiny_model, real_phone
):
    """One short greedy run per engine, the way the correctness gate runs it, with the
    run-time mask MNN_CPU_TARGET=2 set: a MNN_PIPELINE_PROFILE build must say `sme2=0`."""
    from mnnrepro.runs.greedy import run_greedy

    for engine in engines_to_run(request, tiny_model):
        record = engine["record"]
        receipt = push_receipt(
            phone, {"mnn": str(engine["model"])}, "tier-model", engine["dirs"], engine["tools"]
        )
        variant = full_variant(
            "v", {"engine": "e", "runtime": {"thread_num": 1}, "env": {"MNN_CPU_TARGET": "2"}}
        )
        answers = run_greedy(phone, receipt, record, variant, ["hello"], 4, 300, engine["tool"])
        (answer,) = answers["answers"]
        assert len(answer["tokens"]) == 4, answer
        lines = answers["engine"]
        print(f"{record.name}: {lines.get('device_supports')}; {lines.get('cpu_target')}")
        features = supported_features(lines.get("device_supports", ""))
        expected = engine_must_have_sme2(request, real_phone)
        assert features.get("sme2") is expected, (
            f"the engine says {lines.get('device_supports')!r}; expected sme2: {int(expected)}"
        )
        if record.as_written.get("flags", {}).get("MNN_PIPELINE_PROFILE"):
            assert "sme2=0" in lines["cpu_target"]  # the run-time mask took
