"""The phone tier fails on a phone that is not what it is declared to be: a loopback phone
with a real SME2-less cpuinfo (a Dimensity 9400+'s) declared `--phone-sme2 yes`, and passes
the same checks when declared a negative-control phone (`--phone-sme2 no`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.device, pytest.mark.xdist_group("phone-tier")]
ROOT = Path(__file__).resolve().parents[2]


def tier(*options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q"),
            *("-m", "device", str(ROOT / "tests" / "phone" / "test_phone_tier.py")),
            *("-k", "sme2_on_every_core", "--phone-loopback-cpuinfo", "dimensity9400plus"),
            *options,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_a_phone_without_sme2_declared_with_it_fails_the_tier():
    told_sme2 = tier("--phone-sme2", "yes")
    assert told_sme2.returncode == 1, told_sme2.stdout[-3000:]
    assert "1 failed" in told_sme2.stdout and "cores with sme2: 0 of" in told_sme2.stdout
    negative_control = tier("--phone-sme2", "no")
    assert negative_control.returncode == 0, negative_control.stdout[-3000:]
