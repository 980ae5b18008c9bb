"""`local`: this machine. Files are used in place, commands run as child processes in a
scratch work dir.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

from mnnrepro.devices import callgrind, profilers
from mnnrepro.devices.base import (
    CPUFREQ_SCRIPT,
    Device,
    _read,
    cpuinfo_summary,
    idle_host_load,
    parse_cpufreq,
    run_process,
    thermal_zones,
)
from mnnrepro.devices.power import rapl_reader
from mnnrepro.files import sha256_file


class LocalDevice(Device):
    kind = "local"

    def __init__(self, name: str, python: str = "", profiler: str = "perf"):
        super().__init__(name)
        self._python = python or sys.executable
        self.profiler = profiler  # perf (samples) or callgrind (instructions by class)
        if profiler == callgrind.PROFILER:
            self.profile_counts = "instructions by class"  # devices/instruction_mix.py
        self.workdir = Path(tempfile.mkdtemp(prefix=f"mnnrepro-{name}-"))

    @classmethod
    def of_spec(cls, name: str, spec: dict) -> LocalDevice:
        return cls(name, python=spec["python"], profiler=spec["profiler"])  # the plan filled both

    def stage(self, local_path, dest):
        return str(Path(local_path).resolve())  # same file system: used in place

    def verify(self, expected):
        for path, digest in expected.items():
            if not Path(path).is_file() or sha256_file(path) != digest:
                raise RuntimeError(f"refusing to run: {path} does not match what was staged")

    def run(self, argv, timeout, env=None, command=None):
        """command: what actually runs for argv (argv wrapped by a profiler), if not argv."""
        return run_process(
            argv,
            command or argv,
            timeout,
            self.workdir,
            {**os.environ, **env} if env else None,
            env,
        )

    @property
    def marks_phases(self) -> bool:
        return self.profiler == callgrind.PROFILER  # callgrind_phases; perf samples

    def profile_phases(self, argv, timeout, env, libraries, hz, marker, phases):
        return callgrind.callgrind_phases(self, argv, timeout, env, libraries, phases)

    def profile(self, argv, timeout, env, libraries, hz):
        if self.profiler == callgrind.PROFILER:
            return callgrind.callgrind_profile(self, argv, timeout, env, libraries)

        perf = profilers.require("perf", profilers.PERF_HINT)
        data = self.scratch("perf.data")
        command = profilers.perf_record_command(perf, argv, data, hz)
        result = self.run(argv, timeout, env, command)
        if not result.ok:
            return result, {}
        report = run_process(argv, profilers.perf_report_command(perf, data), 600, None, None)
        if not report.ok:
            raise profilers.ProfilerError(f"perf report failed: {report.stderr[-2000:]}")
        rows = profilers.parse_perf_report(report.stdout)
        return result, profilers.answer("perf record -e cpu-clock", "samples", rows)

    def fetch(self, device_path, local_path):
        shutil.copyfile(device_path, local_path)

    def scratch(self, name: str) -> str:
        return str(self.workdir / name)

    def put_text(self, text, device_path):
        Path(device_path).write_text(text, encoding="utf-8")

    def python(self):
        return self._python

    def site_dirs(self):
        return [d for d in sys.path if d]  # this process's Python: the workflow's environment

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

    @property
    def lock_key(self):
        # the host's CPUs: its local and QEMU devices share them, so a job of the host's own
        # runs alone (the QEMU devices hold it shared: runs/device_lock.py)
        return f"host-{platform.node()}"

    def cpufreq(self):
        result = run_process(["sh"], ["sh", "-c", CPUFREQ_SCRIPT], 30, None, None)
        return parse_cpufreq(result.stdout) if result.ok else {}

    def other_load_now(self, window_s):
        return idle_host_load(window_s)

    def power_reader(self):
        return rapl_reader()

    def thermal(self):
        return thermal_zones()

    def close(self):
        shutil.rmtree(self.workdir, ignore_errors=True)
