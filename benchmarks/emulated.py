"""The workflow's emulated userland for a benchmark: config/emulated-sme2.yaml's pinned QEMU and
arm64 packages, fetched and checked once into a work directory (the receipt the workflow's
QemuDevice reads), as the rule fetch_emulation_userland fetches them for a run."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from mnnrepro.devices.userland import provide_userland  # noqa: E402
from mnnrepro.files import write_json  # noqa: E402


def userland_receipt(work: Path) -> Path:
    """work/emulation/userland.json, the userland fetched there unless it is already."""
    import yaml

    receipt = work / "emulation" / "userland.json"
    if not receipt.is_file():
        pins = yaml.safe_load((ROOT / "config" / "emulated-sme2.yaml").read_text())
        receipt.parent.mkdir(parents=True, exist_ok=True)
        write_json(receipt, provide_userland(pins["toolchains"]["emulation"], receipt.parent))
    return receipt
