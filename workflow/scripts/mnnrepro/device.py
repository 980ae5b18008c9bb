"""Devices: where an engine runs. One class per device kind; the workflow talks to `Device`.

A device stages files, runs a command with a timeout and reports facts. `local` is this
machine: staging copies files into a scratch work dir, commands run as child processes.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mnnrepro.hashing import sha256_file


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int | None  # None: killed by the timeout
    stdout: str
    stderr: str
    seconds: float
    # mean number of CPUs busy with other work while it ran (this host only; None elsewhere)
    other_load: float | None = None
    # CPU time the command itself used (this host only)
    own_cpu_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Device:
    kind = "abstract"
    emulated = False

    def __init__(self, name: str):
        self.name = name
        self.bytes_pushed = 0
        self.files_skipped = 0
        self.receipts: list[dict] = []  # one entry per file staged: path, sha256, pushed

    def stage(self, local_path: str | os.PathLike, dest: str) -> str:
        """Make a local file or directory available on the device under <workdir>/<dest>.

        Returns its device path (for a file: the file's). Implementations skip files that are
        already there with the same sha256.
        """
        raise NotImplementedError

    def verify(self, expected: dict[str, str]) -> None:
        """Raise unless every device path has the expected sha256 (checked on the device)."""
        raise NotImplementedError

    def scratch(self, name: str) -> str:
        raise NotImplementedError

    def run(self, argv: list[str], timeout: float, env: dict | None = None) -> CommandResult:
        """Run argv (never through a shell string built by hand) with extra env variables."""
        raise NotImplementedError

    def engine_log_supports(self) -> str:
        """MNN's `The device supports:` line where the engine logs elsewhere (Android logcat)."""
        return ""

    def fetch(self, device_path: str, local_path: str | os.PathLike) -> None:
        raise NotImplementedError

    def put_text(self, text: str, device_path: str) -> None:
        """Write a small text file on the device."""
        raise NotImplementedError

    def python(self) -> str:
        raise NotImplementedError

    def facts(self) -> dict:
        raise NotImplementedError

    def thermal(self) -> dict:
        """Current temperatures in °C by zone name (empty where the device has none)."""
        return {}

    def thermal_status(self) -> int | None:
        """Android thermal status (0 = NONE ... 6 = SHUTDOWN), None where there is none."""
        return None

    def close(self) -> None:
        pass


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpuinfo_summary(text: str) -> dict:
    """Model name and ISA feature flags from /proc/cpuinfo text (x86 `flags`, arm `Features`)."""
    model, features, processors = "", set(), 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "processor":
            processors += 1
        elif key in ("model name", "hardware", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "features"):
            features.update(value.split())
    return {"model": model, "processors": processors, "features": sorted(features)}


def thermal_zones(root: str = "/sys/class/thermal") -> dict:
    zones = {}
    for zone in sorted(Path(root).glob("thermal_zone*")):
        raw = _read(str(zone / "temp")).strip()
        if raw.lstrip("-").isdigit():
            name = _read(str(zone / "type")).strip() or zone.name
            zones[f"{zone.name}:{name}"] = int(raw) / 1000.0
    return zones


class LocalDevice(Device):
    kind = "local"

    def __init__(self, name: str, python: str = ""):
        super().__init__(name)
        self._python = python or sys.executable
        self.workdir = Path(tempfile.mkdtemp(prefix=f"mnnrepro-{name}-"))

    def stage(self, local_path, dest):
        return str(Path(local_path).resolve())  # same file system: used in place

    def verify(self, expected):
        for path, digest in expected.items():
            if not Path(path).is_file() or sha256_file(path) != digest:
                raise RuntimeError(f"refusing to run: {path} does not match what was staged")

    def run(self, argv, timeout, env=None):
        return run_process(
            argv, argv, timeout, self.workdir, {**os.environ, **env} if env else None
        )

    def fetch(self, device_path, local_path):
        shutil.copyfile(device_path, local_path)

    def scratch(self, name: str) -> str:
        return str(self.workdir / name)

    def put_text(self, text, device_path):
        Path(device_path).write_text(text, encoding="utf-8")

    def python(self):
        return self._python

    def facts(self):
        cpu = cpuinfo_summary(_read("/proc/cpuinfo"))
        governor = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").strip()
        return {
            "device": self.name,
            "kind": self.kind,
            "emulated": self.emulated,
            "hostname": platform.node(),
            "os": platform.platform(),
            "machine": platform.machine(),
            "cpu_model": cpu["model"] or platform.processor(),
            "cpu_count": os.cpu_count(),
            "cpu_features": cpu["features"],
            "sme2": "sme2" in cpu["features"],
            "cpufreq_governor": governor,
            "loadavg": list(os.getloadavg()),
            "thermal_c": self.thermal(),
            "python_executable": self._python,
        }

    def thermal(self):
        return thermal_zones()

    def close(self):
        shutil.rmtree(self.workdir, ignore_errors=True)


def busy_cpu_seconds() -> float | None:
    """CPU time this host spent not idle since boot, all CPUs (steal included); None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_process(
    argv: list[str], command: list[str], timeout: float, cwd, env: dict | None
) -> CommandResult:
    """Run command (argv, possibly wrapped, e.g. by QEMU) on this host; never raises on exit.

    Also measures the other work this host did meanwhile (busy CPU time not spent by the
    command), so a benchmark can show which repetitions shared the CPUs with something else.
    """
    busy, own = busy_cpu_seconds(), children_cpu_seconds()
    start = time.monotonic()
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",  # engines print bytes of random-weight models' text
            timeout=timeout,
            cwd=cwd,
            check=False,
            env=env,
        )
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as err:
        code, stdout, stderr = None, _text(err.stdout), _text(err.stderr)
    seconds = time.monotonic() - start
    own_cpu = children_cpu_seconds() - own
    other = None if busy is None else other_load(busy_cpu_seconds() - busy, own_cpu, seconds)
    return CommandResult(argv, code, stdout, stderr, seconds, other, round(own_cpu, 3))


def other_load(busy_cpu_s: float, own_cpu_s: float, seconds: float) -> float:
    """Mean CPUs busy with other work: the host's busy CPU time minus the command's own."""
    return round(max(0.0, busy_cpu_s - own_cpu_s) / max(seconds, 1e-9), 3)


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def make_device(name: str, spec: dict) -> Device:
    """Build the device named in config from its `devices.<name>` entry."""
    if "local" in spec:
        return LocalDevice(name, python=spec["local"].get("python", ""))
    if "adb" in spec:
        from mnnrepro.adb import AdbDevice  # adbutils only where an adb device is used

        return AdbDevice(name, spec["adb"])
    if "qemu" in spec:
        from mnnrepro.emulation import QemuDevice

        return QemuDevice(name, spec["qemu"])
    raise ValueError(f"config key `devices.{name}`: unsupported device kind {sorted(spec)}")
