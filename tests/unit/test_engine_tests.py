"""The engines' own tests: run_test.out's outcomes read from real captured output of MNN
3.6.1's suite (tests/data/mnn_tests), crashes and time limits from real processes on this
host, the stand-in MNN's suite built and run through the same code, and the validity check a
pair gets from them."""

from __future__ import annotations

import io
import shutil
from dataclasses import replace

import pytest
from conftest import design_of, section

from mnnrepro.analysis.engine_tests import (
    engine_tests_check,
    engine_tests_section,
    engine_tests_table,
)
from mnnrepro.devices.base import CommandResult
from mnnrepro.devices.local import LocalDevice
from mnnrepro.engines.pairs import Pair
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.runs.engine_tests import (
    CRASH,
    FAIL,
    NO_SUITE,
    PASS,
    TIMEOUT,
    NoSuchTest,
    outcome_of,
    run_engine_tests,
)

SETTINGS = section("engine_tests", tests=["op/matmul"], timeout_s=600, precision="low", threads=1)
# the exit codes the captured runs ended with (tests/data/mnn_tests/README.md)
CAPTURED = {"qemu-no-sme": 0, "qemu-vl512": 0, "qemu-vl256": 2}


def captured(root, cpu: str) -> CommandResult:
    path = root / "tests" / "data" / "mnn_tests" / f"matmul-361-sme2on-{cpu}.stdout.txt"
    return CommandResult(["run_test.out", "op/matmul"], CAPTURED[cpu], path.read_text(), "", 1.0)


def test_mnns_own_output_is_read_per_named_test(root):
    ok = outcome_of("op/matmul", captured(root, "qemu-vl512"))
    assert ok["outcome"] == PASS
    assert ok["tests_run"] == ["op/matmul", "op/matmulBConst"] and ok["failed"] == []
    assert ok["device_supports"].endswith("sme2: 1")
    wrong = outcome_of("op/matmul", captured(root, "qemu-vl256"))
    assert wrong["outcome"] == FAIL
    assert wrong["failed"] == ["op/matmul", "op/matmulBConst"]
    assert outcome_of("op/matmul", captured(root, "qemu-no-sme"))["outcome"] == PASS


def test_a_crash_and_a_hang_are_the_tests_they_happened_in(tmp_path):
    """Real processes on this host: one killed by SIGSEGV while running a test, one past its
    time limit (a 1 s limit on a 60 s sleep: no load makes that pass)."""
    device = LocalDevice("host")
    start = "printf '\\trunning op/first.\\n\\trunning op/second.\\n'"
    crashed = device.run(["sh", "-c", f"{start}; kill -SEGV $$"], 60)
    result = outcome_of("op", crashed)
    assert result["outcome"] == CRASH and result["died_in"] == "op/second"
    hung = device.run(["sh", "-c", f"{start}; exec sleep 60"], 1)
    result = outcome_of("op", hung)
    assert result["outcome"] == TIMEOUT and result["died_in"] == "op/second"


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("cmake"), reason="cmake is missing")
def test_the_stand_in_suite_is_built_pushed_with_the_engine_and_run(root, tmp_path):
    """The stand-in MNN (tests/data/fake-mnn) with MNN_BUILD_TEST: its run_test.out lands
    below the engine's directory, out of the SME2 kernel check, and runs per named test."""
    from mnnrepro.engines.mnn_source.build import build_engine
    from mnnrepro.toolchain.records import BuildJob

    src = tmp_path / "src"
    shutil.copytree(root / "tests" / "data" / "fake-mnn", src)
    source = {"kind": "path", "commit": "0" * 40, "dirty": False, "path": str(src)}
    flags = {"MNN_BUILD_LLM": True, "MNN_SME2": True, "MNN_BUILD_TEST": True}
    spec = {"platform": "host", "flags": flags, "expect": {}}
    engine_dir = tmp_path / "engines" / "fake" / "bin"
    job = BuildJob("fake", source, spec, str(tmp_path / "b"), str(engine_dir), io.StringIO())
    record = build_engine(job)
    record = EngineRecord.of({**record, "kind": "build"})
    suite, _ = record.kind.test_suite(record)
    assert suite == "tests/run_test.out"
    assert "tests/run_test.out" in {f["path"] for f in record.files}
    device = LocalDevice("host")
    settings = replace(SETTINGS, tests=("op/matmul", "op/lowMemory"))
    result = run_engine_tests(device, record, suite, str(engine_dir), settings)
    assert [(t["test"], t["outcome"]) for t in result["tests"]] == [
        ("op/matmul", PASS),
        ("op/lowMemory", PASS),
    ]
    assert result["tests"][1]["tests_run"] == ["op/lowMemory/gemm"]
    with pytest.raises(NoSuchTest, match=r"`engine_tests\.tests`: 'op/nothing' runs no test"):
        run_engine_tests(
            device, record, suite, str(engine_dir), replace(SETTINGS, tests=("op/nothing",))
        )
    without = EngineRecord.of({**record.as_written, "test_suite": None})
    assert without.kind.test_suite(without) == (
        None,
        "built without MNN_BUILD_TEST",
    )


def record_of(root, device: str, cpu: str, engine: str) -> dict:
    return {
        "device": device,
        "engine": engine,
        "suite": "tests/run_test.out",
        "no_suite": None,
        "tests": [outcome_of("op/matmul", captured(root, cpu))],
    }


VARIANTS = {"off": {"engine": "sme2-off"}, "on": {"engine": "sme2-on"}}
PAIR = Pair.compared(
    design_of({"comparison": {"baseline": "off", "treatment": "on"}, "variants": VARIANTS})
)[0]


def test_a_pair_is_invalid_where_its_treatment_fails_a_test_its_baseline_passes(root):
    """The SME2 ON build's real failure at 256 bits, against a baseline that passed (the
    same suite's output on the CPU without SME, standing for the OFF build's)."""
    wrong = {
        "sme2-off": record_of(root, "vl256", "qemu-no-sme", "sme2-off"),
        "sme2-on": record_of(root, "vl256", "qemu-vl256", "sme2-on"),
    }
    (check,) = engine_tests_check(PAIR, wrong)
    assert not check["passed"] and check["pair"] == ["off", "on"]
    assert "op/matmul: fail (op/matmul, op/matmulBConst)" in check["evidence"]
    right = {**wrong, "sme2-on": record_of(root, "vl512", "qemu-vl512", "sme2-on")}
    (check,) = engine_tests_check(PAIR, right)
    assert check["passed"] and "1/1 tests pass" in check["evidence"]
    # nothing to judge: an engine without a suite, or one engine against itself
    prebuilt = {"device": "d", "engine": "sme2-off", "suite": None, "tests": [], "no_suite": "x"}
    assert engine_tests_check(PAIR, {**wrong, "sme2-off": prebuilt}) == []
    one_engine = {"off": {"engine": "e"}, "on": {"engine": "e"}}
    same = Pair.compared(
        design_of({"comparison": {"baseline": "off", "treatment": "on"}, "variants": one_engine})
    )[0]
    assert engine_tests_check(same, {"e": wrong["sme2-on"]}) == []


def test_the_table_and_the_summary_say_why_an_engine_has_no_suite(root):
    prebuilt = {
        "device": "host",
        "engine": "mnn-pypi",
        "suite": None,
        "tests": [],
        "no_suite": "the PyPI wheel ships no test suite",
    }
    table = engine_tests_table([prebuilt, record_of(root, "vl256", "qemu-vl256", "sme2-on")])
    assert list(table["outcome"]) == [NO_SUITE, FAIL]
    section = "\n".join(engine_tests_section(table))
    assert "| host | mnn-pypi | - | no test suite | the PyPI wheel ships no test suite |" in section
    assert "| vl256 | sme2-on | op/matmul | fail | op/matmul op/matmulBConst |" in section
