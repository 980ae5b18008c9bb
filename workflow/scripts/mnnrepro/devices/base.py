"""Devices: where an engine runs. One class per device kind; the workflow talks to `Device`.

A device stages files, runs a command with a timeout and reports facts. This module holds the
interface, the host's process runner (with the other-load measurement) and /proc readers.
"""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from mnnrepro.devices.profilers import ProfilerError
from mnnrepro.errors import ReproError


class DeviceLost(ReproError, RuntimeError):
    """The device went away mid-command (a cable pulled, a reboot, the adb server restarted):
    runs/lost_device.surviving waits for it to come back and runs the step again."""


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
    # the exact line that ran, as a person repeats it by hand (see shell_line)
    command_line: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Device:
    kind = "abstract"
    emulated = False
    marks_phases = False  # it has profile_phases: one process's marked phases counted apart
    # what its profiler counts beyond the profile's rows, part of a kept profile's key (a
    # profiler that counts more profiles again): "" for the sampling profilers
    profile_counts = ""

    def __init__(self, name: str):
        self.name = name
        self.lock_wait_s: float | None = None  # `devices.<name>.lock_wait_s` (make_device)
        self.bytes_pushed = 0
        self.files_skipped = 0
        self.receipts: list[dict] = []  # one entry per file staged: path, sha256, pushed
        self.reconnects = 0  # how many times a job waits for it to come back (a phone's)

    @classmethod
    def of_spec(cls, name: str, spec: dict) -> Device:
        """The device from its kind's entry under `devices.<name>` (e.g. its `adb` mapping)."""
        return cls(name, spec)

    def not_ready(self) -> list[str]:
        """Why the device is not ready to be measured, one line each (a phone's screen,
        battery, storage: devices/readiness.py); none for a device without such a state."""
        return []

    def wait_until_back(self, stage: str, lost: DeviceLost) -> float:
        """Wait for a device that was lost during stage to be usable again; the seconds
        waited. A device that cannot be lost (this host, QEMU on it) never waits."""
        raise lost

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

    def run_invocation(self, argv: list[str], timeout: float, env: dict | None = None):
        """run one measured invocation: also measures the device's other work meanwhile
        (`other_load`) where that costs more than run does (a phone); the host's run always
        measures it."""
        return self.run(argv, timeout, env)

    def profile(
        self, argv: list[str], timeout: float, env: dict | None, libraries: dict[str, str], hz: int
    ) -> tuple[CommandResult, dict]:
        """Run argv once under this device kind's profiler (devices/profilers.py): its result
        and {"profiler", "unit", "rows": [{dso, symbol, count}], "total"}. libraries: the
        engine's files by basename -> the local ELF file whose symbols name them."""
        raise ProfilerError(f"device {self.name}: a {self.kind} device has no profiler")

    def profile_phases(self, argv, timeout, env, libraries, hz, marker: str, phases: list):
        """Where marks_phases: profile's counts of one process that marks each phase (the
        Python runner's `phases` mode, markers in the folder `marker`): (result, phase ->
        profile, and qemu_blocks.OUTSIDE_PHASES: the rest of the process)."""
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

    def site_dirs(self) -> list[str]:
        """Where the device's Python finds installed packages, as paths on this host (the
        prebuilt engine's library is looked up there for kernel attribution); empty where
        they are not on this host's file system."""
        return []

    def facts(self) -> dict:
        raise NotImplementedError

    def thermal(self) -> dict:
        """Current temperatures in °C by zone name (empty where the device has none)."""
        return {}

    def hal_temperatures(self) -> dict[str, dict]:
        """Android's own temperatures (`dumpsys thermalservice`, from the thermal HAL): name
        -> {"c", "type"}; empty where there are none (runs/thermal.py)."""
        return {}

    def thermal_status(self) -> int | None:
        """Android thermal status (0 = NONE ... 6 = SHUTDOWN), None where there is none."""
        return None

    def thermal_service(self) -> tuple[int | None, dict[str, dict]]:
        """(thermal_status(), hal_temperatures()) at once: a phone reads both from one
        `dumpsys thermalservice`, which the thermal gate runs every few seconds."""
        return self.thermal_status(), self.hal_temperatures()

    @property
    def lock_key(self) -> str:
        """What is locked while a job runs on this device (runs/device_lock.py): the device
        itself, so different devices run in parallel and one device runs one job."""
        return f"device-{self.name}"

    def cpufreq(self) -> dict:
        """Per core: its cpufreq governor and current frequency (kHz); empty where the
        device has no cpufreq (e.g. a VM)."""
        return {}

    def other_load_now(self, window_s: float) -> float | None:
        """CPUs busy with other work over the next window_s seconds (nothing of ours runs
        meanwhile); None where it cannot be measured."""
        return None

    def screen_state(self) -> dict | None:
        """A phone's wakefulness and display state; None where there is no screen."""
        return None

    def power_reader(self):
        """A devices.power.PowerReader for energy per token, or a sentence saying why none."""
        return f"a {self.kind} device has no power readings"

    def build_fingerprint(self) -> str | None:
        """The system software's build fingerprint (a phone's ro.build.fingerprint), recorded
        with every invocation: firmware that changes mid-experiment makes it invalid (MNN
        #4828: SME2 garbage fixed by a system update). None where there is none."""
        return None

    def battery(self) -> dict | None:
        """{"level", "temperature_c", "charging"} where the device runs on a battery (a
        phone's `dumpsys battery`); None where it has none."""
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


CPUFREQ_SCRIPT = (
    "for c in /sys/devices/system/cpu/cpu[0-9]*; do "
    'echo "$(basename $c) $(cat $c/cpufreq/scaling_governor 2>/dev/null) '
    '$(cat $c/cpufreq/scaling_cur_freq 2>/dev/null)"; done'
)


def parse_cpufreq(text: str) -> dict:
    """CPUFREQ_SCRIPT's output -> {cpuN: {governor, cur_khz}} (cores without cpufreq left out)."""
    cores = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            cores[parts[0]] = {"governor": parts[1], "cur_khz": int(parts[2])}
    return cores


def thermal_zones(root: str = "/sys/class/thermal") -> dict:
    zones = {}
    for zone in sorted(Path(root).glob("thermal_zone*")):
        raw = _read(str(zone / "temp")).strip()
        if raw.lstrip("-").isdigit():
            name = _read(str(zone / "type")).strip() or zone.name
            zones[f"{zone.name}:{name}"] = int(raw) / 1000.0
    return zones


def busy_cpu_seconds() -> float | None:
    """CPU time this host spent not idle since boot, all CPUs (steal included); None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return busy_ticks(fields) / os.sysconf("SC_CLK_TCK")


def busy_ticks(fields: list[int]) -> int:
    """Clock ticks not idle in the first eight fields of a /proc/stat `cpu` line (steal
    included, idle and iowait not)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq + steal


def idle_host_load(window_s: float) -> float | None:
    """CPUs this host keeps busy over window_s while this process sleeps (its own CPU time,
    if any, subtracted); None off Linux."""
    busy, own = busy_cpu_seconds(), time.process_time()
    if busy is None:
        return None
    start = time.monotonic()
    time.sleep(window_s)
    seconds = time.monotonic() - start
    return other_load(busy_cpu_seconds() - busy, time.process_time() - own, seconds)


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def shell_line(
    cwd, env: dict | None, command: list[str], clean_env: bool = False, make_cwd: bool = False
) -> str:
    """One POSIX shell line that runs command in cwd with env, every word quoted: what a
    record keeps so that one invocation can be repeated by hand. clean_env: the command
    runs with env alone (`env -i`), not added to the caller's environment; make_cwd: cwd is
    a scratch directory that is gone after the job (the host's), made first."""
    assignments = [f"{k}={shlex.quote(str(v))}" for k, v in sorted((env or {}).items())]
    words = [*(["env", "-i"] if clean_env else []), *assignments]
    words += [shlex.quote(str(a)) for a in command]
    where = shlex.quote(str(cwd))
    return (f"mkdir -p {where} && " if make_cwd else "") + f"cd {where} && " + " ".join(words)


def run_process(
    argv: list[str],
    command: list[str],
    timeout: float,
    cwd,
    env: dict | None,
    shown_env: dict | None = None,
    clean_env: bool = False,
) -> CommandResult:
    """Run command (argv, possibly wrapped, e.g. by QEMU) on this host; never raises on exit.

    Also measures the other work this host did meanwhile (busy CPU time not spent by the
    command), so a benchmark can show which repetitions shared the CPUs with something else.
    shown_env: the variables the caller set (recorded in `command_line`; `env` is the whole
    environment the process gets); clean_env: env is all it gets.
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
    line = shell_line(cwd, shown_env if not clean_env else env, command, clean_env, True)
    return CommandResult(argv, code, stdout, stderr, seconds, other, round(own_cpu, 3), line)


def other_load(busy_cpu_s: float, own_cpu_s: float, seconds: float) -> float:
    """Mean CPUs busy with other work: the host's busy CPU time minus the command's own."""
    return round(max(0.0, busy_cpu_s - own_cpu_s) / max(seconds, 1e-9), 3)


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
