"""The style gates CI runs: Snakemake's linter, snakefmt, ruff check and ruff format."""

from __future__ import annotations

import subprocess
import sys

import pytest

GATES = {
    "snakemake --lint": [sys.executable, "-m", "snakemake", "--lint"],
    "snakefmt --check": [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow/"],
    "ruff check": [sys.executable, "-m", "ruff", "check", "."],
    "ruff format --check": [sys.executable, "-m", "ruff", "format", "--check", "."],
}


@pytest.mark.parametrize("gate", sorted(GATES))
def test_gate_is_clean(root, gate):
    proc = subprocess.run(GATES[gate], cwd=root, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
