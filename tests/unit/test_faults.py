"""The fault matrix (tests/fault_matrix.py), every cell run for real on the loopback phone or
this host: what the workflow promises when a phone or an engine misbehaves."""

from __future__ import annotations

import pytest
from fault_matrix import CELLS, run_cell


@pytest.mark.slow
@pytest.mark.parametrize("cell", CELLS, ids=[c.name for c in CELLS])
def test_fault(cell, tiny_model, adb_server_port, tmp_path):
    row = run_cell(cell, tmp_path, adb_server_port, tiny_model)
    if cell.expect == "refused":  # before anything runs: one line naming the key to change
        assert row["refused"], row["outcome"]
        assert "`devices.phone.adb." in row["outcome"] or "unauthorized" in row["outcome"]
        return
    assert row["struck"] == 1, f"the fault never struck: the cell tests nothing: {row}"
    assert row["outcome"].startswith("ended" if cell.expect.startswith("ended") else "survived")
    if row["outcome"].startswith("ended"):  # one line naming the device and what to do
        assert "device phone" in row["outcome"] and "rerun" in row["outcome"]
    assert row["lost_or_changed"] == []  # every completed repetition kept, byte for byte
    assert row["half_written"] == []
    assert row["same_schedule"] and row["reps_after"] == 4
    if cell.stage == "benchmark":  # two repetitions were done when it struck
        assert row["reps_at_fault"] == 2, row
    if cell.stage == "benchmark" and cell.expect == "survived":  # measured again, counted
        assert row["attempts"] == 2, row
    assert row["same_verdict"], row["verdict"]
