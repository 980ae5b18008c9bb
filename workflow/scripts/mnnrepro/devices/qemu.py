"""`qemu`: an emulated arm64 Linux device, QEMU user mode (SME2-capable, with a chosen CPU and
streaming vector length) over the pinned userland; its timings are recorded, never judged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mnnrepro.devices.base import run_process
from mnnrepro.devices.local import LocalDevice
from mnnrepro.errors import DataError

AT_HWCAP2 = 26


HWCAP2_SME2 = 1 << 37  # arch/arm64/include/uapi/asm/hwcap.h


def vector_length_bits(cpu: str) -> int | None:
    for part in cpu.split(","):
        key, _, value = part.partition("=")
        if key == "sme-default-vector-length" and value.isdigit():
            return int(value) * 8
    return None


class QemuDevice(LocalDevice):
    """arm64 Linux under QEMU user mode, on this host's file system (so staging, fetching and
    verifying are the local device's); its timings are recorded but never judged."""

    kind = "qemu"
    emulated = True

    def __init__(self, name: str, spec: dict):
        receipt_path = spec.get("userland", "resources/emulation/userland.json")
        try:
            self.userland = json.loads(Path(receipt_path).read_text())
        except OSError:
            raise DataError(
                receipt_path,
                f"missing: device {name} runs in the emulated userland it describes",
                "it is made by the rule fetch_emulation_userland",
            ) from None
        super().__init__(name, python=self.userland["python"])
        self.cpu = spec.get("cpu", "max")

    def run(self, argv, timeout, env=None):
        qemu = [self.userland["qemu"], "-cpu", self.cpu, "-L", self.userland["sysroot"]]
        guest_env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONPATH": self.userland["site"],
            **(env or {}),
        }
        return run_process(argv, [*qemu, *argv], timeout, self.workdir, guest_env, clean_env=True)

    def power_reader(self):
        return "emulated: the host's power says nothing about an arm64 CPU's"

    def facts(self):
        probe = (
            "import ctypes; libc = ctypes.CDLL(None); libc.getauxval.restype = "
            f"ctypes.c_ulong; print(libc.getauxval({AT_HWCAP2}))"
        )
        out = self.run([self.python(), "-c", probe], timeout=120)
        hwcap2 = int(out.stdout.strip()) if out.ok and out.stdout.strip().isdigit() else None
        return {
            "device": self.name,
            "kind": self.kind,
            "emulated": True,
            "cpu_model": f"QEMU {self.cpu}",
            "cpu": self.cpu,
            "sme_vector_length_bits": vector_length_bits(self.cpu),
            "hwcap2": hwcap2,
            "sme2": bool(hwcap2 and hwcap2 & HWCAP2_SME2),
            "cpu_features": ["sme2"] if hwcap2 and hwcap2 & HWCAP2_SME2 else [],
            "cpu_count": os.cpu_count(),
            "os": "Linux (QEMU user mode)",
            "qemu": self.userland.get("qemu_version", ""),
            "thermal_c": {},
        }
