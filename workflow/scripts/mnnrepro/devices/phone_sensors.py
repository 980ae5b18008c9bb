"""What an adb phone reports of itself, read through its shell: the facts recorded before a run
(CPU, SME, cores, OS, storage), its temperatures and thermal status, battery, power draw, the
load of its other work and its screen. A mixin of AdbDevice (adb.py, the connection): every
reading is one `self.run` of an argv list; phone_readings.py parses what the shell prints."""

from __future__ import annotations

from pathlib import Path

from mnnrepro.devices.android import hal_temperatures
from mnnrepro.devices.base import CPUFREQ_SCRIPT, cpuinfo_summary, parse_cpufreq
from mnnrepro.devices.phone_readings import (
    CPU_READING,
    PROPS,
    battery_of,
    free_kb_of,
    phone_load,
    screen_of,
    sme_facts,
    thermal_status_of,
)
from mnnrepro.devices.power import PowerReader, battery_watts


class PhoneSensors:
    """The readings of AdbDevice: it provides run, name, kind, emulated, serial, server and
    workdir."""

    def getprop(self, key: str) -> str:
        return self.run(["getprop", key], timeout=30).stdout.strip()

    def thermal(self) -> dict:
        out = self.run(
            [
                "sh",
                "-c",
                "for z in /sys/class/thermal/thermal_zone*; do "
                'echo "$z $(cat $z/type) $(cat $z/temp)"; done',
            ],
            timeout=30,
        ).stdout
        temps = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[2].lstrip("-").isdigit():
                value = int(parts[2])
                temps[f"{Path(parts[0]).name}:{parts[1]}"] = (
                    value / 1000 if abs(value) > 200 else float(value)
                )
        return temps

    def cpufreq(self) -> dict:
        return parse_cpufreq(self.run(["sh", "-c", CPUFREQ_SCRIPT], timeout=30).stdout)

    POWER_SUPPLY = "/sys/class/power_supply/battery"

    def power_reader(self):
        """Battery current x voltage from the phone's power-supply sysfs, read through adb."""
        files = [f"{self.POWER_SUPPLY}/current_now", f"{self.POWER_SUPPLY}/voltage_now"]

        def read():
            # the phone's clock (/proc/uptime: CLOCK_BOOTTIME) in the same command as the
            # reading, so that the sample lines up with the phases the runner recorded
            result = self.run(["cat", "/proc/uptime", *files], timeout=10)
            words = result.stdout.split() if result.ok else []
            if len(words) != 4:
                return None
            watts = battery_watts(*words[2:])
            try:
                clock = float(words[0])
            except ValueError:
                return watts
            return None if watts is None else (watts, clock)

        if read() is None:
            return f"{' and '.join(files)} not readable on {self.name}"
        return PowerReader(f"sysfs {files[0]} x {files[1]} (adb)", read)

    def thermal_service(self) -> tuple[int | None, dict[str, dict]]:
        """The thermal status and the HAL temperatures from one `dumpsys thermalservice`."""
        out = self.run(["dumpsys", "thermalservice"], timeout=30).stdout
        return thermal_status_of(out), hal_temperatures(out)

    def hal_temperatures(self) -> dict[str, dict]:
        return self.thermal_service()[1]

    def thermal_status(self) -> int | None:
        return self.thermal_service()[0]

    def battery(self) -> dict:
        return battery_of(self.run(["dumpsys", "battery"], timeout=30).stdout)

    def facts(self):
        cpuinfo = self.run(["cat", "/proc/cpuinfo"], timeout=30).stdout
        cpu = cpuinfo_summary(cpuinfo)
        per_core = [
            line.split(":", 1)[1].split()
            for line in cpuinfo.splitlines()
            if line.lower().startswith("features")
        ]
        cores = self.run(
            [
                "sh",
                "-c",
                "for c in /sys/devices/system/cpu/cpu[0-9]*; do "
                'echo "$(basename $c) $(cat $c/cpufreq/cpuinfo_max_freq 2>/dev/null)'
                ' $(cat $c/topology/cluster_id 2>/dev/null)"; done',
            ],
            timeout=30,
        ).stdout
        sme_vl = self.run(
            ["cat", "/proc/sys/abi/sme_default_vector_length"], timeout=30
        ).stdout.strip()
        df = self.run(["df", "-k", self.workdir.rsplit("/", 1)[0] or "/"], timeout=30).stdout
        return {
            "device": self.name,
            "kind": self.kind,
            "emulated": self.emulated,
            "serial": self.serial,
            "adb_server": "{}:{}".format(*self.server),
            **{key: self.getprop(prop) for key, prop in PROPS.items()},
            "cpu_model": self.getprop("ro.soc.model") or cpu["model"],
            "cpu_count": len(per_core) or cpu["processors"],
            "cpu_features": cpu["features"],
            "cpu_features_per_core": per_core,
            "sme2": bool(per_core) and all("sme2" in f for f in per_core),
            **sme_facts(per_core, cores, sme_vl),
            "cpu_max_freq_khz": {
                p[0]: int(p[1])
                for p in map(str.split, cores.splitlines())
                if len(p) >= 2 and p[1].isdigit()
            },
            "thermal_status": self.thermal_status(),
            "thermal_c": self.thermal(),
            "battery": self.battery(),
            "workdir": self.workdir,
            "workdir_free_kb": free_kb_of(df),
            "os": f"Android {self.getprop('ro.build.version.release')}",
            "kernel": self.run(["uname", "-r"], timeout=30).stdout.strip(),
        }

    def build_fingerprint(self) -> str | None:
        return self.getprop("ro.build.fingerprint") or None

    def other_load_now(self, window_s: float) -> float | None:
        """CPUs the phone's other work keeps busy over window_s, from its /proc/stat read
        twice in one shell command (with /proc/uptime for the window as the phone counts it);
        the shell and `sleep` themselves use next to nothing."""
        script = f"{CPU_READING}; sleep {float(window_s):g}; {CPU_READING}"
        lines = self.run(["sh", "-c", script], timeout=30 + window_s).stdout.splitlines()
        return phone_load(lines)

    def screen_state(self) -> dict | None:
        """Wakefulness and display state (`dumpsys power`): a phone that dozes or turns its
        screen on mid-run is not the phone that was measured before."""
        return screen_of(self.run(["dumpsys", "power"], timeout=30).stdout)
