"""The device named in config, from its `devices.<name>` entry (one kind each)."""

from __future__ import annotations

from mnnrepro.devices.base import Device
from mnnrepro.devices.kinds import device_kind
from mnnrepro.devices.local import LocalDevice


def make_device(name: str, spec: dict) -> Device:
    """Build the device named in config from its `devices.<name>` entry."""
    key = device_kind(name, spec).key
    if key == "adb":
        from mnnrepro.devices.adb import AdbDevice  # adbutils only where an adb device is used

        return AdbDevice(name, spec["adb"])
    if key == "qemu":
        from mnnrepro.devices.qemu import QemuDevice

        return QemuDevice(name, spec["qemu"])
    return LocalDevice(name, python=spec["local"].get("python", ""))
