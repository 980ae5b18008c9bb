"""Engines keyed by what defines them; measurements keyed by what was measured; env; build logs.

Builds here are real CMake builds of tests/data/fake-mnn (a stand-in for MNN at its build
interface); the schedule runs the real local device with the tiny model.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

import pytest
from conftest import SHORT_BENCH, two_variant_specs

from mnnrepro.config import ConfigError
from mnnrepro.devices.local import LocalDevice
from mnnrepro.engines.mnn_source.build import build_engine
from mnnrepro.engines.mnn_source.kind import BuiltEngine
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json, write_json
from mnnrepro.plan.checks import check_references
from mnnrepro.runs.benchmark import run_schedule
from mnnrepro.runs.raw_files import done_record, engine_identity, measurement_key
from mnnrepro.runs.schedule import interleaved
from mnnrepro.runs.staging import push_receipt
from mnnrepro.toolchain.cmake import run_logged
from mnnrepro.toolchain.records import BuildJob, engine_key

FLAGS = {"MNN_BUILD_LLM": True, "MNN_LOW_MEMORY": True, "MNN_SUPPORT_TRANSFORMER_FUSE": True}


def engine(platform="host", **flags):
    return {"build": {"platform": platform, "flags": {**FLAGS, **flags}}}


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def checkout(root, tmp_path):
    """A local MNN-like checkout under git (the fake project), as `mnn.source.path` names one."""
    src = tmp_path / "mnn"
    shutil.copytree(root / "tests" / "data" / "fake-mnn", src)
    git("init", "-q", cwd=src)
    git("add", "-A", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=src)
    return src


@pytest.mark.slow
def test_engine_keys_follow_platform_flags_and_source(checkout):
    tree = {"source": {"path": str(checkout)}}  # the `mnn` section

    def key(name, spec, ndk_pin=None):
        return engine_key(name, spec, "build", BuiltEngine.compilers, tree, ndk_pin)

    on_host = key("sme2-on", engine("host", MNN_SME2=True))
    assert on_host.startswith("sme2-on-")
    assert on_host == key("sme2-on", engine("host", MNN_SME2="ON"))  # same value
    assert on_host != key("sme2-on", engine("linux-arm64", MNN_SME2=True))
    assert on_host != key("sme2-on", engine("host", MNN_SME2=False))
    # the checkout moved to another commit: another source, another engine
    (checkout / "mnn_core.c").write_text("int changed(void) { return 1; }\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two", cwd=checkout)
    assert on_host != key("sme2-on", engine("host", MNN_SME2=True))
    ndk = {"version": "r27c", "sha256": "0" * 64}  # `toolchains.ndk`
    phone = engine("android-arm64")
    assert key("e", phone, ndk) != key("e", phone, {"version": "r28"})


def test_the_compiler_the_flags_name_defines_the_engine_and_must_be_installed(
    checkout, tmp_path, monkeypatch
):
    """CMAKE_CXX_COMPILER in a build's flags: its version (not the machine's c++) keys the
    engine, so an upgrade of that compiler is another engine; a compiler that is not
    installed is one line naming the config key, before CMake runs."""
    from mnnrepro.toolchain import BuildError

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    compiler = bin_dir / "cxx-under-test"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    tree = {"source": {"path": str(checkout)}}

    def key_with(version: str) -> str:
        compiler.write_text(f"#!/bin/sh\necho '{version}'\n")
        compiler.chmod(0o755)
        spec = engine("host", CMAKE_CXX_COMPILER=compiler.name)
        return engine_key("e", spec, "build", BuiltEngine.compilers, tree)

    assert key_with("cxx-under-test 16.0.6") != key_with("cxx-under-test 17.0.1")
    source = {"kind": "path", "path": str(checkout), "commit": "c" * 40, "dirty": False}
    spec = {"platform": "host", "flags": {**FLAGS, "CMAKE_C_COMPILER": "no-such-cc-16"}}
    job = BuildJob("e", source, spec, str(tmp_path / "b"), str(tmp_path / "e"), io.StringIO())
    with pytest.raises(BuildError) as error:
        build_engine(job)
    assert str(error.value) == (
        "config key `engines.e.build.flags`: CMAKE_C_COMPILER no-such-cc-16 is not installed "
        "(not found on PATH)"
    )
    assert not (tmp_path / "b").exists()  # refused before CMake configured anything


@pytest.mark.slow
def test_a_rebuild_of_identical_inputs_keeps_every_measurement(checkout, tmp_path):
    """Same source, flags and toolchain, built again elsewhere (other build dir, other wall
    time): the raw records' key is unchanged, so no repetition is measured again."""
    source = {"kind": "path", "path": str(checkout), "commit": "c" * 40, "dirty": False}
    spec = {"platform": "host", "flags": {**FLAGS, "MNN_SME2": True}}
    records = [
        build_engine(
            BuildJob(
                "e", source, spec, str(tmp_path / f"b{i}"), str(tmp_path / f"e{i}"), io.StringIO()
            )
        )
        for i in (1, 2)
    ]
    assert records[0]["cmake_command"] != records[1]["cmake_command"]  # other build dir
    measured = {"prompt_tokens": 8, "generate_tokens": 4, "warmup": 0}

    def key(record, **extra):
        return measurement_key(
            {"engine": EngineRecord.of(record), "runtime": {}, "env": {}, **extra}, measured
        )

    assert key(records[0]) == key(records[1])
    raw = tmp_path / "raw" / "rep-000.json"
    write_json(raw, {"status": "ok", "plan_key": key(records[0])})
    assert done_record(raw, key(records[1])) is not None
    # what was measured changed: another artifact, another env
    records = [EngineRecord.of(record) for record in records]
    changed = EngineRecord.of(
        {**records[0].as_written, "files": [{**records[0].files[0], "sha256": "0" * 64}]}
    )
    assert engine_identity(changed) != engine_identity(records[0])
    assert done_record(raw, key(changed)) is None
    assert done_record(raw, key(records[1], env={"MNN_CPU_TARGET": "2"})) is None


class EnvRecordingDevice(LocalDevice):
    def __init__(self):
        super().__init__("host")
        self.envs = []

    def run(self, argv, timeout, env=None):
        self.envs.append(dict(env or {}))
        return super().run(argv, timeout, env)


def test_a_variants_env_reaches_the_process_and_the_raw_record(tiny_model, tmp_path):
    device = LocalDevice("host")
    result = device.run(
        [sys.executable, "-c", "import os; print(os.environ['MNN_CPU_TARGET'])"],
        timeout=60,
        env={"MNN_CPU_TARGET": "2"},
    )
    assert result.stdout.strip() == "2"
    device.close()

    specs = two_variant_specs()
    specs["a"]["env"] = {"MNN_CPU_TARGET": "2"}
    recording = EnvRecordingDevice()
    receipt = push_receipt(recording, {"mnn": str(tiny_model)}, "tiny")
    run_schedule(recording, interleaved(["a", "b"], 1), specs, receipt, SHORT_BENCH, tmp_path)
    recording.close()
    assert {"MNN_CPU_TARGET": "2"} in recording.envs
    assert read_json(tmp_path / "a" / "rep-000.json")["spec"]["env"] == {"MNN_CPU_TARGET": "2"}
    assert read_json(tmp_path / "b" / "rep-000.json")["spec"]["env"] == {}


def test_env_the_workflow_sets_itself_is_refused_naming_the_key():
    config = {
        "engines": {"e": {"prebuilt": {"pypi": "mnn==3.6.1"}}},
        "variants": {
            "a": {"engine": "e", "env": {"LD_LIBRARY_PATH": "/tmp"}},
            "b": {"engine": "e"},
        },
        "devices": {"host": {"local": {}}},
        "comparison": {
            "baseline": "a",
            "treatment": "b",
            "also": [{"baseline": "x", "treatment": "b"}],
        },
    }
    with pytest.raises(ConfigError) as err:
        check_references(config)
    assert "config key `variants.a.env.LD_LIBRARY_PATH`: set by the workflow itself" in str(
        err.value
    )
    assert "config key `comparison.also.0.baseline`: 'x' is not a variant" in str(err.value)


def test_build_output_reaches_the_log_while_the_build_runs(tmp_path):
    """The command waits (at most 10 s) for its first line to appear in the log, then copies
    the log: with output written only at the end, the copy would lack that line."""
    log_path, seen = tmp_path / "build.log", tmp_path / "seen.txt"
    script = (
        "echo '[1/2] compiling'; "
        f"for i in $(seq 200); do grep -q '^.1/2. compiling' '{log_path}' && break; "
        "sleep 0.05; done; "
        f"cat '{log_path}' > '{seen}'; echo '[2/2] done'"
    )
    with open(log_path, "a", encoding="utf-8") as log:
        run_logged(["sh", "-c", script], log, progress="build e")
    # the command line is logged first, so look at the output lines only
    assert "\n[1/2] compiling\n" in seen.read_text()
    assert "\n[2/2] done" not in seen.read_text()
    assert "\n[2/2] done" in log_path.read_text()


def test_build_progress_goes_to_the_console(tmp_path, capsys):
    steps = "; ".join(f"echo '[{i}/20] x'" for i in range(1, 21))
    with open(tmp_path / "log", "a", encoding="utf-8") as log:
        run_logged(["sh", "-c", steps], log, progress="build e")
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "build e: [1/20]" and shown[-1] == "build e: [20/20]"
    assert len(shown) <= 11  # every tenth of the way, not every line
    assert os.path.getsize(tmp_path / "log") > 0
