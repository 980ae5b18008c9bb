"""Device kinds, each declared once: the `devices.<name>` key that selects it, the engine
platforms whose binaries it runs, what names one physical device of the kind, and which of
its settings are paths on the device."""

from __future__ import annotations

import platform
from dataclasses import dataclass

from mnnrepro.devices.callgrind import PROFILER as CALLGRIND


def host_platforms() -> tuple[str, ...]:
    """What this machine runs: host builds, and linux-arm64 builds on an arm64 Linux host."""
    arm_linux = platform.system() == "Linux" and platform.machine() in ("aarch64", "arm64")
    return ("host", "linux-arm64") if arm_linux else ("host",)


@dataclass(frozen=True)
class DeviceKind:
    key: str
    platforms: tuple[str, ...]  # engine platforms (`build.platform`) whose binaries it runs
    # its class, "module:Class", imported only where a device of the kind is made (adbutils
    # only for a phone): devices/factory.py
    device_class: str = "mnnrepro.devices.local:LocalDevice"
    emulated: bool = False  # timings recorded, never judged; no bandwidth of its own
    needs_userland: bool = False  # runs in the pinned emulated userland (fetch rule)
    # this machine itself: its benchmark takes every core so nothing else of ours runs
    is_this_host: bool = False
    # the settings that name one physical device (None: each entry is its own device)
    identity: tuple[str, ...] | None = None
    device_paths: tuple[str, ...] = ()  # settings that are paths on the device
    needs: str = ""  # what a run on it needs (the dry run's plan says it)
    # seconds one invocation is assumed to take where no earlier run tells (plan/overview)
    assumed_invocation_s: float | None = None
    # its readiness (screen, battery, storage: devices/readiness.py) is checked as its facts
    # are collected, and every engine build of the experiment waits for that
    checked_before_builds: bool = False

    @property
    def platform(self) -> str:
        """The platform of the programs built for a device of the kind (the SME mask's)."""
        return self.platforms[0]


DEVICE_KINDS: dict[str, DeviceKind] = {
    kind.key: kind
    for kind in (
        DeviceKind("local", host_platforms(), is_this_host=True, needs="this machine, idle"),
        DeviceKind(
            "qemu",
            ("linux-arm64",),
            device_class="mnnrepro.devices.qemu:QemuDevice",
            emulated=True,
            needs_userland=True,
            needs="QEMU 11 and an arm64 userland (a pinned download from Debian's archive)",
        ),
        DeviceKind(
            "adb",
            ("android-arm64",),
            device_class="mnnrepro.devices.adb:AdbDevice",
            identity=("server_host", "server_port", "serial"),
            device_paths=("workdir", "python"),
            needs="a phone on adb",
            # one invocation with the thermal and quiet gates, before any configured cool-down:
            # an assumption (benchmarks/results/phone_precision.md's 72 s less its 30 s
            # cool-down); no phone was reachable
            assumed_invocation_s=42.0,
            checked_before_builds=True,
        ),
    )
}


def device_kind(name: str, spec: dict) -> DeviceKind:
    (key,) = [k for k in spec if k in DEVICE_KINDS] or [None]
    if key is None:
        raise ValueError(f"config key `devices.{name}`: unsupported device kind {sorted(spec)}")
    return DEVICE_KINDS[key]


def counts_instructions(name: str, spec: dict) -> bool:
    """Whether the device's profiles count instructions by class (a prediction's device): an
    emulated one (QEMU's executed blocks), or this host under callgrind."""
    kind = device_kind(name, spec)
    return kind.emulated or (spec.get(kind.key) or {}).get("profiler") == CALLGRIND
