"""A job's time on a device: the device made from its config, locked (one job per device at a
time: runs/device_lock.py), refused if not ready (devices/readiness.py), closed however the job
ends; and a step that survives the device being lost (a cable pulled, a reboot, the adb server
restarted): the device waited for, then the step run again. Every step so run is resumable
(a push skips what is there by hash, a benchmark keeps every finished repetition), so a loss
costs only the step's unfinished part."""

from __future__ import annotations

import contextlib

from mnnrepro.devices.base import Device, DeviceLost
from mnnrepro.devices.factory import make_device
from mnnrepro.devices.readiness import refuse_unless_ready
from mnnrepro.errors import ReproError
from mnnrepro.runs.device_lock import holding


@contextlib.contextmanager
def on_device(name: str, spec: dict, stage: str):
    """The device `name` (its `devices.<name>` entry) for one job's stage, locked and ready."""
    device = make_device(name, spec)
    try:
        with holding(device.lock_key, device.name, device.lock_wait_s, shared=device.emulated):
            refuse_unless_ready(device, stage)
            yield device
    finally:
        device.close()


def surviving(device: Device, stage: str, step, losses: list[dict] | None = None):
    """step() run to its end; each time the device is lost meanwhile it is waited for (its
    `reconnect_wait_s`) and step runs again, up to `reconnects` times. losses, if given, gets
    one entry per loss: the stage, the error, the seconds waited."""
    lost_before = 0
    while True:
        try:
            return step()
        except DeviceLost as lost:
            lost_before += 1
            if lost_before > device.reconnects:
                raise ReproError(
                    f"device {device.name} lost during {stage} {lost_before} times, more than "
                    f"`devices.{device.name}.adb.reconnects` ({device.reconnects}): check its "
                    "cable and power, then rerun; what was measured is kept"
                ) from lost
            waited = device.wait_until_back(stage, lost)
            if losses is not None:
                losses.append({"stage": stage, "error": str(lost), "waited_s": round(waited, 3)})
