"""Android devices over adb (adbutils + the real `adb` server from its wheel): the device
class, the connection (commands, pushes, hashes). What the phone reports of itself (facts,
temperatures, power, load) is phone_sensors.py's, what its shell prints is read in
phone_readings.py, the server is found or started in adb_server.py (with this module, the only
ones that import adbutils). Every
command sent to the device is built from an argv list with shlex.quote
(phone_readings.quote), so names with spaces, quotes or `;` are passed, never executed."""

from __future__ import annotations

import logging
import os
import re
import shlex
import time
from pathlib import Path

import adbutils

from mnnrepro.devices.adb_server import (
    AdbDeviceError,
    ensure_server,
    server_address,
    wanted_serial,
)
from mnnrepro.devices.base import (
    CommandResult,
    Device,
    shell_line,
)
from mnnrepro.devices.phone_readings import (
    invocation_load,
    load_probe_wrapper,
    quote,
)
from mnnrepro.devices.phone_sensors import PhoneSensors
from mnnrepro.files import sha256_file

log = logging.getLogger(__name__)


class AdbDevice(PhoneSensors, Device):
    kind = "adb"

    def __init__(self, name: str, spec: dict):
        super().__init__(name)
        self.spec = spec
        self.workdir = spec.get("workdir", "/data/local/tmp/mnn-repro").rstrip("/")
        self._python = spec.get("python", "")
        host, port = server_address(spec)
        self.server = (host, port)
        ensure_server(port, host)
        self.client = adbutils.AdbClient(host=host, port=port)
        serial = wanted_serial(spec)
        if spec.get("connect"):
            answer = self.client.connect(serial, timeout=20)
            if "connected" not in answer:
                raise AdbDeviceError(
                    f"config key `devices.{name}.adb.serial`: adb connect "
                    f"{serial} answered {answer!r}"
                )
        self.serial = self._resolve(serial, float(spec.get("ready_timeout_s", 15)))
        self.dev = self.client.device(self.serial)
        made = self.dev.shell2(quote(["mkdir", "-p", self.workdir]), timeout=60, v2=True)
        if made.returncode != 0:
            raise AdbDeviceError(
                f"config key `devices.{name}.adb.workdir`: cannot create "
                f"{self.workdir} on the device: {made.stderr.strip()}"
            )

    def _resolve(self, serial: str, wait_s: float = 15.0) -> str:
        deadline = time.monotonic() + wait_s
        while True:  # a device just connected is `offline` until its handshake is done
            attached = [(d.serial, d.state) for d in self.client.list()]
            states = dict(attached)
            settled = (
                states.get(serial) == "device"
                if serial != "auto"
                else all(state != "offline" for state in states.values())
            )
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        ready = [s for s, state in attached if state == "device"]
        if serial == "auto":
            if len(ready) != 1:
                raise AdbDeviceError(
                    f"config key `devices.{self.name}.adb.serial` is `auto`, which needs exactly "
                    f"one attached device; attached: {attached or 'none'}. Name one serial."
                )
            return ready[0]
        if serial not in ready:
            raise AdbDeviceError(
                f"config key `devices.{self.name}.adb.serial`: {serial!r} is "
                f"not attached and ready; attached: {attached or 'none'}"
            )
        return serial

    # ---- commands and files -----------------------------------------------------------

    def run(self, argv, timeout, env: dict[str, str] | None = None) -> CommandResult:
        # the assignments stand right before the command they are for (not before `cd`)
        return self._run_line(argv, shell_line(self.workdir, env, argv), timeout)

    def run_invocation(self, argv, timeout, env=None) -> CommandResult:
        """run, also measuring the phone's other work meanwhile: its /proc/stat before and
        after, less the command's own CPU time (as the host does for every command). The
        record's command line is the command's, without the probe around it."""
        command = shell_line(self.workdir, env, argv)
        probe = shlex.quote(f"{self.workdir}/.load-probe")
        result = self._run_line(argv, load_probe_wrapper(command, probe), timeout)
        readings = self.run(["sh", "-c", f"cat {probe}; rm -f {probe}"], 30).stdout
        result.other_load, result.own_cpu_s = invocation_load(readings.splitlines())
        result.command_line = self.adb_line(command)
        return result

    def adb_line(self, command: str) -> str:
        """The command as typed on the controller: the device's shell gets it as one word."""
        host, port = self.server
        return (
            f"adb -H {shlex.quote(host)} -P {port} -s {shlex.quote(self.serial)} "
            f"shell {shlex.quote(command)}"
        )

    def _run_line(self, argv, command: str, timeout) -> CommandResult:
        line = self.adb_line(command)
        start = time.monotonic()
        try:
            result = self.dev.shell2(command, timeout=timeout, v2=True)
        except adbutils.AdbTimeout:
            return CommandResult(
                argv, None, "", "timed out", time.monotonic() - start, command_line=line
            )
        except (adbutils.AdbError, OSError) as err:
            raise AdbDeviceError(f"device {self.name} ({self.serial}) lost: {err}") from err
        return CommandResult(
            argv,
            result.returncode,
            result.stdout,
            result.stderr,
            time.monotonic() - start,
            command_line=line,
        )

    def profile(self, argv, timeout, env, libraries, hz):
        from mnnrepro.devices.profilers import simpleperf_profile

        return simpleperf_profile(self, argv, timeout, env, hz)

    def check(self, argv: list[str], timeout: float = 60) -> str:
        result = self.run(argv, timeout)
        if not result.ok:
            raise AdbDeviceError(
                f"on {self.name}: `{quote(argv)}` failed "
                f"({result.returncode}): {result.stderr.strip()}"
            )
        return result.stdout

    def device_hashes(self, paths: list[str]) -> dict[str, str]:
        """sha256 of device files; files that do not exist are simply absent."""
        if not paths:
            return {}
        out = self.run(["sha256sum", *paths], timeout=600).stdout
        hashes = {}
        for line in out.splitlines():
            digest, _, path = line.partition("  ")
            if re.fullmatch(r"[0-9a-f]{64}", digest):
                hashes[path] = digest
        return hashes

    def push_files(self, pairs: list[tuple[Path, str]]) -> list[dict]:
        """Push (local, device path) pairs, skipping files whose device sha256 matches."""
        wanted = {remote: sha256_file(local) for local, remote in pairs}
        present = self.device_hashes(list(wanted))
        receipt = []
        for local, remote in pairs:
            digest = wanted[remote]
            pushed = present.get(remote) != digest
            if pushed:
                self.check(["mkdir", "-p", os.path.dirname(remote)])
                part = remote + ".part"
                self.dev.sync.push(str(local), part)
                self.check(["mv", "-f", part, remote])
                self.bytes_pushed += local.stat().st_size
            else:
                self.files_skipped += 1
            receipt.append(
                {
                    "device_path": remote,
                    "sha256": digest,
                    "size": local.stat().st_size,
                    "pushed": pushed,
                }
            )
        after = self.device_hashes([r["device_path"] for r in receipt if r["pushed"]])
        for r in receipt:
            if r["pushed"] and after.get(r["device_path"]) != r["sha256"]:
                raise AdbDeviceError(f"push of {r['device_path']} did not verify on the device")
        self.receipts.extend(receipt)
        return receipt

    def stage(self, local_path, dest: str) -> str:
        local_path = Path(local_path)
        base = f"{self.workdir}/{dest}"
        if local_path.is_dir():
            files = sorted(
                p for p in local_path.rglob("*") if p.is_file() and not p.name.startswith(".")
            )
            self.push_files([(p, f"{base}/{p.relative_to(local_path).as_posix()}") for p in files])
            return base
        self.push_files([(local_path, f"{base}/{local_path.name}")])
        return f"{base}/{local_path.name}"

    def verify(self, expected: dict[str, str]) -> None:
        actual = self.device_hashes(list(expected))
        for path, digest in expected.items():
            if actual.get(path) != digest:
                raise AdbDeviceError(
                    f"refusing to run on {self.name}: {path} does not match what was pushed "
                    f"(expected sha256 {digest}, found {actual.get(path, 'no file')})"
                )

    def fetch(self, device_path, local_path):
        self.dev.sync.pull(device_path, str(local_path))

    def put_text(self, text: str, device_path: str) -> None:
        self.dev.sync.push(text.encode("utf-8"), device_path)

    def scratch(self, name: str) -> str:
        self.check(["mkdir", "-p", f"{self.workdir}/scratch"])
        return f"{self.workdir}/scratch/{name}"

    def python(self):
        if not self._python:
            raise AdbDeviceError(
                f"config key `devices.{self.name}.adb.python` is empty: the prebuilt (Python) "
                "engine needs a Python with the `mnn` wheel on the device"
            )
        return self._python

    def engine_log_supports(self) -> str:
        # Android builds with MNN_USE_LOGCAT=ON print through logcat, tag MNNJNI.
        out = self.run(["logcat", "-d", "-s", "MNNJNI:*"], timeout=30).stdout
        lines = [ln for ln in out.splitlines() if "The device supports:" in ln]
        return lines[-1][lines[-1].index("The device supports:") :].strip() if lines else ""

    @property
    def lock_key(self) -> str:
        # the phone, whatever the config calls it: a serial is unique only on its adb server
        # (two hosts may each have an emulator-5554), so the key names the server too
        host, port = self.server
        host = "127.0.0.1" if host in ("localhost", "::1") else host
        return f"adb-{host}-{port}-{self.serial}"
