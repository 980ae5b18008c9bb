"""The device named in config, from its `devices.<name>` entry (one kind each)."""

from __future__ import annotations

import importlib

from mnnrepro.devices.base import Device
from mnnrepro.devices.kinds import device_kind


def make_device(name: str, spec: dict) -> Device:
    """Build the device named in config from its `devices.<name>` entry (with how long a job
    waits for it while another holds it: `lock_wait_s`)."""
    device = kind_device(name, spec)
    device.lock_wait_s = spec["lock_wait_s"]  # the plan filled it (None: wait forever)
    return device


def kind_device(name: str, spec: dict) -> Device:
    """The device of its kind's class (DeviceKind.device_class), from the kind's entry."""
    kind = device_kind(name, spec)
    module, _, cls = kind.device_class.partition(":")
    return getattr(importlib.import_module(module), cls).of_spec(name, spec[kind.key])
