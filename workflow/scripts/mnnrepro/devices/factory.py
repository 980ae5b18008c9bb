"""The device named in config, from its `devices.<name>` entry (one kind each)."""

from __future__ import annotations

from mnnrepro.devices.base import Device
from mnnrepro.devices.local import LocalDevice


def make_device(name: str, spec: dict) -> Device:
    """Build the device named in config from its `devices.<name>` entry."""
    if "local" in spec:
        return LocalDevice(name, python=spec["local"].get("python", ""))
    if "adb" in spec:
        from mnnrepro.devices.adb import AdbDevice  # adbutils only where an adb device is used

        return AdbDevice(name, spec["adb"])
    if "qemu" in spec:
        from mnnrepro.devices.qemu import QemuDevice

        return QemuDevice(name, spec["qemu"])
    raise ValueError(f"config key `devices.{name}`: unsupported device kind {sorted(spec)}")
