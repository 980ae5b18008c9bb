"""The engine's own test suite on a device (config `engine_tests`, docs/correctness.md "The
engine's own tests"): each named test of MNN's run_test.out is a process of its own with a
time limit, so a crash or a hang is that test's and the others still run. Its outcome is read
from what the suite prints (test/MNNTestSuite.cpp at 3.6.1): "\\trunning NAME." before each
test, then, once all have run, "Error: NAME" per failed one and a TEST_CASE_AMOUNT_UNIT line;
its exit code is the number of failed tests. A process that ends without that summary died
(a signal, an abort): `crash`, in the last test it said it was running, where its output
reached us (the suite prints with printf, which a pipe buffers: a killed process may leave
none)."""

from __future__ import annotations

import re

from mnnrepro.devices.base import CommandResult
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.errors import ReproError
from mnnrepro.sections import EngineTests

PASS, FAIL, CRASH, TIMEOUT, NO_SUITE = "pass", "fail", "crash", "timeout", "no test suite"
RUNNING = re.compile(r"^\trunning (\S+)\.$", re.M)
ERROR = re.compile(r"^Error: (\S+)$", re.M)
SUMMARY = re.compile(r"^TEST_CASE_AMOUNT_UNIT\S*: (\{.*\})\s*$", re.M)
SUPPORTS = re.compile(r"^The device supports:.*$", re.M)


class NoSuchTest(ReproError, ValueError):
    """A configured test name that runs no test of the suite."""


def outcome_of(name: str, result: CommandResult) -> dict:
    """One named test's process, judged: its outcome, the tests it ran, those that failed,
    the one it died in (crash, timeout), and how to repeat it."""
    out = result.stdout
    ran, failed, summary = RUNNING.findall(out), ERROR.findall(out), SUMMARY.search(out)
    if result.returncode is None:
        outcome = TIMEOUT
    elif summary is None:
        outcome = CRASH
    elif failed or result.returncode != 0:
        outcome = FAIL
    else:
        outcome = PASS
    if summary is not None and not ran:
        raise NoSuchTest(f"config key `engine_tests.tests`: {name!r} runs no test of the suite")
    supports = SUPPORTS.search(out)
    return {
        "test": name,
        "outcome": outcome,
        "tests_run": ran,
        "failed": failed,
        "died_in": ran[-1] if outcome in (CRASH, TIMEOUT) and ran else None,
        "returncode": result.returncode,
        "seconds": round(result.seconds, 3),
        "device_supports": supports.group(0) if supports else "",
        "command_line": result.command_line,
        "stderr_tail": result.stderr[-1000:],
    }


def without_suite(device_name: str, record: dict, reason: str) -> dict:
    """The record of an engine that has no suite to run: why, and no device asked."""
    return {
        "device": device_name,
        "engine": record.name,
        "suite": None,
        "tests": [],
        "no_suite": reason,
    }


def run_engine_tests(
    device, record: EngineRecord, suite: str, engine_dir: str, settings: EngineTests
) -> dict:
    """Every configured test of one engine's suite (its path below the engine's directory)
    on one device (engine_dir: where the engine is on the device)."""
    env = {"LD_LIBRARY_PATH": engine_dir}
    tests = []
    for name in settings.tests:
        argv = record.kind.suite_command(engine_dir, suite, name, settings)
        tests.append(outcome_of(name, device.run(argv, settings.timeout_s, env)))
    return {
        "device": device.name,
        "engine": record.name,
        "suite": suite,
        "tests": tests,
        "no_suite": None,
    }
