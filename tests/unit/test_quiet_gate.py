"""The quiet-machine gate: before each invocation on a local or emulated device, wait (bounded)
until other work is below `bench.max_other_load`; what waited and what ran under load is
recorded, and the report says "measured quiet" or "under load". No test here needs an idle
machine: a busy one only makes the loaded cases more loaded."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import ROOT, full_bench

from mnnrepro.analysis.summary import blocks_under_load
from mnnrepro.analysis.tables import under_load
from mnnrepro.analysis.text import conditions
from mnnrepro.devices.base import Device
from mnnrepro.devices.local import LocalDevice
from mnnrepro.errors import ReproError
from mnnrepro.runs.gates import quiet_gate

SPIN = "import time\nt = time.time()\nwhile time.time() - t < 60: pass"


def test_a_busy_neighbour_makes_the_gate_wait_then_mark_the_invocation():
    """A real process spinning on one CPU: other load about one CPU, above a 0.5 limit."""
    neighbour = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        gate = quiet_gate(
            LocalDevice("host"),
            full_bench(**{"max_other_load": 0.5, "quiet_timeout_s": 1.5, "quiet_window_s": 0.5}),
        )
    finally:
        neighbour.kill()
        neighbour.wait()
    assert gate["quiet"] is False and gate["load"] > 0.5
    assert gate["waited_s"] >= 1.5  # it waited, bounded by the timeout, then gave up


def test_a_limit_no_host_can_exceed_passes_at_once():
    gate = quiet_gate(
        LocalDevice("host"),
        full_bench(**{"max_other_load": 64, "quiet_timeout_s": 60, "quiet_window_s": 0.2}),
    )
    # quiet at the first look (it did not wait out its 60 s), and the load is a CPU count
    # (busy CPUs of this host's other work): not more than the host has, give or take the
    # clock ticks of /proc/stat over a 0.2 s window (a percentage or a tick count is far off)
    assert gate["quiet"] is True and gate["waited_s"] < 60
    assert 0 <= gate["load"] <= __import__("os").cpu_count() + 0.5


class ScriptedLoad(Device):
    """Test double: a device whose load readings follow a script (a real host cannot be made
    quiet on demand while other tests run)."""

    def __init__(self, loads):
        super().__init__("scripted")
        self.loads = list(loads)

    def other_load_now(self, window_s):
        return self.loads.pop(0)


def test_the_gate_runs_as_soon_as_the_load_drops():
    device = ScriptedLoad([1.8, 1.2, 0.1])
    gate = quiet_gate(device, full_bench(**{"max_other_load": 0.25, "quiet_timeout_s": 60}))
    assert gate["quiet"] is True and gate["load"] == 0.1 and device.loads == []


def test_an_emulated_device_measures_the_load_once_and_never_waits():
    """Its timings are recorded, never judged, and emulated devices run beside each other
    (runs/device_lock.py): a loaded reading marks the invocation, the gate does not wait."""
    device = ScriptedLoad([1.8, 0.1])
    device.emulated = True
    gate = quiet_gate(device, full_bench(**{"max_other_load": 0.25, "quiet_timeout_s": 60}))
    assert gate["quiet"] is False and gate["load"] == 1.8 and device.loads == [0.1]


def test_devices_that_cannot_measure_load_and_a_disabled_gate_pass():
    assert quiet_gate(Device("phone"), full_bench(**{"max_other_load": 0.25}))["quiet"] is None
    assert quiet_gate(ScriptedLoad([]), full_bench(**{"max_other_load": None}))["quiet"] is None


def test_under_load_is_the_gate_timing_out_or_load_during_the_run():
    quiet = {"quiet_gate": {"quiet": True}, "other_load": 0.1}
    assert not under_load(quiet, 0.25)
    assert under_load({**quiet, "quiet_gate": {"quiet": False}}, 0.25)
    assert under_load({**quiet, "other_load": 0.9}, 0.25)
    assert not under_load({**quiet, "other_load": 0.9}, None)  # no gate configured


def test_the_report_separates_quiet_from_loaded_blocks():
    part = pd.DataFrame(
        {
            "variant": ["a", "b", "a", "b", "c"],
            "block": [0, 0, 1, 1, 1],
            "under_load": [False, True, False, False, True],
        }
    )
    assert blocks_under_load(part, ("a", "b")) == 1  # block 0; c is not in the pair
    row = pd.Series({"blocks_under_load": 1, "n_pairs": 2})
    assert conditions(row) == "**under load** (1/2 blocks)"
    assert conditions(pd.Series({"blocks_under_load": 0, "n_pairs": 2})) == "quiet"


def test_a_gate_setting_is_the_one_the_plan_filled_from_the_schema():
    """One default per setting, the schema's, filled once when the plan is made (config.check):
    the gates read the bench they are handed and fill nothing themselves (a reader's own
    fallback once said 0 s for 600)."""
    from mnnrepro.config import load_schema
    from mnnrepro.plan.checks import check
    from mnnrepro.sections import Bench

    schema = load_schema()["properties"]["bench"]["properties"]
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    check(config, local_paths=False, fill_defaults=True)
    for key in ("thermal_timeout_s", "quiet_timeout_s", "quiet_window_s", "max_other_load"):
        assert key not in yaml.safe_load((ROOT / "config" / "config.yaml").read_text()).get(
            "bench", {}
        )
        assert getattr(Bench.of(config["bench"]), key) == schema[key]["default"], key
        incomplete = {k: v for k, v in config["bench"].items() if k != key}
        with pytest.raises(ReproError, match=f"config key `bench`: missing \\['{key}'\\]"):
            Bench.of(incomplete)
