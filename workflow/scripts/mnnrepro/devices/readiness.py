"""Is a phone ready to be measured? Its screen awake (not locked, not dozing), its battery
charged enough and charging as configured, room for the engine and model: each refusal one
line naming the device, what it found, the config key and what to do. Checked when a phone's
facts are collected, which every engine build of the experiment waits for (so a phone that is
not ready stops the run before any build), and again as every job on it starts. (`adb`
unauthorized is refused where the phone is reached: devices/adb.py.) Pure: the readings come
from devices/phone_sensors.py."""

from __future__ import annotations

from mnnrepro.errors import ReproError


class NotReady(ReproError, RuntimeError):
    pass


def refusals(name: str, ready: dict, screen: dict | None, battery: dict, free_kb: int) -> list[str]:
    """One line per way the phone is not ready under its `devices.<name>.adb.ready` settings
    (screen_awake, min_battery_pct, charging, min_free_mb); none where it is ready. A reading
    the phone does not give refuses nothing."""
    key = f"devices.{name}.adb.ready"
    lines = []
    wake = (screen or {}).get("wakefulness")
    if ready["screen_awake"] and wake not in (None, "Awake"):
        state = "dozing" if wake == "Dozing" else "asleep (its screen off or locked)"
        lines.append(
            f"device {name} is {state} (dumpsys power: mWakefulness={wake}): unlock it and keep "
            f"it awake (Developer options > Stay awake), or set `{key}.screen_awake: false`"
        )
    level = battery.get("level")
    if level is not None and level < ready["min_battery_pct"]:
        lines.append(
            f"device {name}: battery at {level} %, below `{key}.min_battery_pct` "
            f"({ready['min_battery_pct']} %): charge it, then rerun"
        )
    charging = battery.get("charging")
    if ready["charging"] == "required" and charging is False:
        lines.append(f"device {name} is not charging (`{key}.charging: required`): plug it in")
    if ready["charging"] == "forbidden" and charging:
        lines.append(
            f"device {name} is charging (`{key}.charging: forbidden`): unplug its charger "
            "(debug over Wi-Fi), then rerun"
        )
    if free_kb < ready["min_free_mb"] * 1024:
        lines.append(
            f"device {name}: {free_kb // 1024} MB free in its workdir, below `{key}.min_free_mb` "
            f"({ready['min_free_mb']} MB): free space on the phone or set "
            f"`devices.{name}.adb.workdir` to a larger partition"
        )
    return lines


def refuse_unless_ready(device, stage: str) -> None:
    """Raise NotReady (one line per refusal) before stage runs on a device that is not ready;
    a device without a readiness check (this host, QEMU) always is."""
    lines = device.not_ready()
    if lines:
        raise NotReady("\n".join(f"{line} (before {stage})" for line in lines))
