"""What an Android phone's shell prints, read: CPU counters around an invocation (the phone's
own load and everyone else's), SME facts of its kernel; and the quoting of every command sent
to it (an argv list through shlex.quote: names with spaces, quotes or `;` are passed, never
executed). Pure functions: no adb here."""

from __future__ import annotations

import re
import shlex

from mnnrepro.devices.base import busy_ticks, other_load

PROPS = {
    "manufacturer": "ro.product.manufacturer",
    "model": "ro.product.model",
    "soc_model": "ro.soc.model",
    "soc_manufacturer": "ro.soc.manufacturer",
    "fingerprint": "ro.build.fingerprint",
    "security_patch": "ro.build.version.security_patch",
    "android_release": "ro.build.version.release",
    "sdk": "ro.build.version.sdk",
    "abi": "ro.product.cpu.abi",
}


def thermal_status_of(thermalservice: str) -> int | None:
    """`dumpsys thermalservice`'s thermal status (0 none ... 6 shutdown)."""
    match = re.search(r"Thermal Status:\s*(\d+)", thermalservice)
    return int(match.group(1)) if match else None


def battery_of(dumpsys_battery: str) -> dict:
    fields = dict(re.findall(r"^\s*([A-Za-z ]+):\s*(.+)$", dumpsys_battery, re.M))
    temp = fields.get("temperature", "")
    return {
        "level": int(fields["level"]) if fields.get("level", "").isdigit() else None,
        "temperature_c": int(temp) / 10 if temp.lstrip("-").isdigit() else None,
        "charging": any(
            fields.get(k) == "true" for k in ("AC powered", "USB powered", "Wireless powered")
        ),
    }


def free_kb_of(df_k: str) -> int | None:
    """Free kB of the last file system `df -k` lists."""
    rows = [r.split() for r in df_k.splitlines()[1:] if len(r.split()) >= 4]
    return int(rows[-1][3]) if rows and rows[-1][3].isdigit() else None


def screen_of(dumpsys_power: str) -> dict | None:
    """Wakefulness and display state of `dumpsys power`."""
    wake = re.search(r"mWakefulness=(\w+)", dumpsys_power)
    display = re.search(r"Display Power: state=(\w+)", dumpsys_power)
    if not wake and not display:
        return None
    return {
        "wakefulness": wake.group(1) if wake else None,
        "display": display.group(1) if display else None,
    }


USER_HZ = 100  # the clock ticks of /proc/stat on Linux and Android
# the phone's clock (CLOCK_BOOTTIME) and its CPU counters, read together
CPU_READING = "cat /proc/uptime; head -n1 /proc/stat"


def busy_window(lines: list[str]) -> tuple[float, float] | None:
    """(busy CPU seconds, window seconds) between two CPU_READING outputs; None unless both
    readings are there and the window is positive."""
    try:
        (t0, s0), (t1, s1) = (
            (float(lines[i].split()[0]), [int(x) for x in lines[i + 1].split()[1:9]])
            for i in (0, 2)
        )
    except (IndexError, ValueError):
        return None
    if t1 <= t0:
        return None
    return (busy_ticks(s1) - busy_ticks(s0)) / USER_HZ, t1 - t0


def phone_load(lines: list[str]) -> float | None:
    """CPUs busy over the window between two CPU_READING outputs; None unless both are there."""
    window = busy_window(lines)
    return None if window is None else other_load(window[0], 0.0, window[1])


def load_probe_wrapper(command: str, probe: str, running: str) -> str:
    """command between two CPU_READINGs, written to the file probe (stdout and stderr stay the
    command's own), then the shell's own stat line: its waited-for children's CPU time is the
    command's. The command's process id is in the file running while it runs (stop_running
    ends it). Exits with the command's code."""
    return (
        f"{{ {CPU_READING}; }} > {probe}; ( {command} ) & echo $! > {running}; wait $!; rc=$?; "
        f"rm -f {running}; {{ {CPU_READING}; cat /proc/$$/stat; }} >> {probe}; exit $rc"
    )


def stop_running(running: str) -> str:
    """End what load_probe_wrapper runs, past its timeout: its process and that one's
    children (the engine), SIGKILL; nothing if it ended meanwhile."""
    return (
        f"[ -f {running} ] || exit 0; p=$(cat {running}); "
        f'pkill -9 -P "$p"; kill -9 "$p"; rm -f {running}; exit 0'
    )


def invocation_load(lines: list[str]) -> tuple[float | None, float | None]:
    """(other CPUs busy, the command's own CPU seconds) from a load_probe_wrapper file: the
    phone's busy time over the window less what the command used itself (the shell's
    cutime + cstime, fields 16 and 17 of /proc/<pid>/stat); (None, None) if incomplete."""
    try:
        after_comm = lines[4].rsplit(")", 1)[1].split()
        own = (int(after_comm[13]) + int(after_comm[14])) / USER_HZ
    except (IndexError, ValueError):
        return None, None
    window = busy_window(lines[:4])
    if window is None:
        return None, round(own, 3)
    return other_load(window[0], own, window[1]), round(own, 3)


def sme_facts(per_core: list[list[str]], cores: str, sme_vl: str) -> dict:
    """What the kernel says about SME: which cores list `sme2`, grouped by cluster (from
    `<cpu>/topology/cluster_id`, where readable), and Linux's default streaming vector length
    (/proc/sys/abi/sme_default_vector_length, bytes; present only where the kernel supports
    SME). Linux exposes no count of SME units (on Arm's C1 cores one unit serves a cluster,
    which the core list per cluster shows but does not prove): recorded as not exposed."""
    clusters: dict[str, list[int]] = {}
    for parts in map(str.split, cores.splitlines()):
        cpu = parts[0].removeprefix("cpu") if parts else ""
        index = int(cpu) if cpu.isdigit() else -1
        if 0 <= index < len(per_core) and "sme2" in per_core[index] and len(parts) == 3:
            clusters.setdefault(parts[2], []).append(index)
    return {
        "sme2_cores": [i for i, features in enumerate(per_core) if "sme2" in features],
        "sme2_cores_by_cluster": dict(sorted(clusters.items())),
        "sme_default_vector_length_bytes": int(sme_vl) if sme_vl.isdigit() else None,
        "sme_units": "not exposed by the kernel",
    }


def quote(argv: list[str]) -> str:
    return " ".join(shlex.quote(str(a)) for a in argv)
