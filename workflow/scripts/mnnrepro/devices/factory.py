"""The device named in config, from its `devices.<name>` entry (one kind each)."""

from __future__ import annotations

from mnnrepro.devices.base import Device
from mnnrepro.devices.kinds import device_kind
from mnnrepro.devices.local import LocalDevice


def make_device(name: str, spec: dict) -> Device:
    """Build the device named in config from its `devices.<name>` entry (with how long a job
    waits for it while another holds it: `lock_wait_s`)."""
    device = kind_device(name, spec)
    device.lock_wait_s = spec.get("lock_wait_s")
    return device


def kind_device(name: str, spec: dict) -> Device:
    key = device_kind(name, spec).key
    if key == "adb":
        from mnnrepro.devices.adb import AdbDevice  # adbutils only where an adb device is used

        return AdbDevice(name, spec["adb"])
    if key == "qemu":
        from mnnrepro.devices.qemu import QemuDevice

        return QemuDevice(name, spec["qemu"])
    return LocalDevice(name, python=spec["local"].get("python", ""))
