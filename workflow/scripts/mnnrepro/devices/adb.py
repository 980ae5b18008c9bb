"""Android devices over adb (adbutils + the real `adb` server from its wheel): the device
class, the connection (commands, pushes, hashes). What the phone reports of itself (facts,
temperatures, power, load) is phone_sensors.py's, what its shell prints is read in
phone_readings.py, the server is found or started in adb_server.py, files are pushed, hashed
and fetched by adb_files.py (with this module, the only ones that import adbutils). Every
command sent to the device is built from an argv list with shlex.quote
(phone_readings.quote), so names with spaces, quotes or `;` are passed, never executed."""

from __future__ import annotations

import logging
import os
import shlex
import time

import adbutils

from mnnrepro.devices.adb_files import CUT, AdbFiles
from mnnrepro.devices.adb_server import (
    AdbDeviceError,
    ensure_server,
    server_address,
    wanted_serial,
)
from mnnrepro.devices.base import (
    CommandResult,
    Device,
    DeviceLost,
    shell_line,
)
from mnnrepro.devices.phone_readings import (
    invocation_load,
    load_probe_wrapper,
    quote,
    stop_running,
)
from mnnrepro.devices.phone_sensors import PhoneSensors
from mnnrepro.devices.profilers import simpleperf_profile
from mnnrepro.devices.readiness import refusals
from mnnrepro.logs import REPORT_S, say

log = logging.getLogger(__name__)


class AdbDevice(PhoneSensors, AdbFiles, Device):
    kind = "adb"

    def __init__(self, name: str, spec: dict):
        super().__init__(name)
        self.spec = spec  # as the plan filled it from the schema: no default is filled here
        self.workdir = spec["workdir"].rstrip("/")
        self._python = spec["python"]
        self.server = server_address(spec)
        self.reconnects = spec["reconnects"]
        self.reconnect_wait_s = float(spec["reconnect_wait_s"])
        self.ready = spec["ready"]
        self.serial = wanted_serial(spec)
        self._attach(float(spec["ready_timeout_s"]))
        made = self.dev.shell2(quote(["mkdir", "-p", self.workdir]), timeout=60, v2=True)
        if made.returncode != 0:
            raise AdbDeviceError(
                f"config key `devices.{name}.adb.workdir`: cannot create "
                f"{self.workdir} on the device: {made.stderr.strip()}"
            )

    def _attach(self, wait_s: float) -> None:
        """Reach the phone: its adb server (started here if it is this host's and none
        runs), `adb connect` where asked, the serial resolved once it is out of `offline`."""
        host, port = self.server
        ensure_server(port, host)
        # adbutils runs `adb start-server` itself when its server does not answer (the server
        # restarted under a job); adb takes the port from here: this device's server's, never
        # the default 5037 of a developer's own server
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
        self.client = adbutils.AdbClient(host=host, port=port)
        deadline = time.monotonic() + wait_s
        while self.spec["connect"]:  # a phone rebooting refuses until it is up again
            answer = self.client.connect(self.serial, timeout=20)
            if "connected" in answer or "authenticate" in answer:  # unauthorized: _resolve
                break
            if time.monotonic() >= deadline:
                raise AdbDeviceError(
                    f"config key `devices.{self.name}.adb.serial`: adb connect "
                    f"{self.serial} answered {answer!r}"
                )
            time.sleep(0.5)
        self.serial = self._resolve(self.serial, max(0.0, deadline - time.monotonic()))
        self.dev = self.client.device(self.serial)

    def not_ready(self) -> list[str]:
        """Why the phone is not ready to be measured (devices/readiness.py), one line each."""
        return refusals(self.name, self.ready, self.screen_state(), self.battery(), self.free_kb())

    def wait_until_back(self, stage: str, lost: DeviceLost) -> float:
        """Wait for the phone lost during stage (a cable, a reboot, the adb server restarted)
        up to `reconnect_wait_s`, saying what it waits for at once and every 30 s; the
        seconds waited, or one line naming the device, the stage and what to do."""
        where = "{} on adb server {}:{}".format(self.serial, *self.server)
        key = f"devices.{self.name}.adb.reconnect_wait_s"
        start = time.monotonic()
        say(f"{self.name}: lost during {stage} ({lost}); waiting for {where} to come back")
        next_report = start + REPORT_S
        while True:
            try:
                self._attach(wait_s=2.0)
                self.check(["true"], timeout=20)
                waited = time.monotonic() - start
                say(f"{self.name}: back after {waited:.0f} s; {stage} goes on")
                return waited
            except (AdbDeviceError, DeviceLost, *CUT):
                pass  # not back yet, or back and gone again (a link that flaps)
            now = time.monotonic()
            if now - start >= self.reconnect_wait_s:
                raise AdbDeviceError(
                    f"device {self.name} ({where}) lost during {stage} and not back within "
                    f"{self.reconnect_wait_s:g} s (`{key}`): reconnect it until `adb devices` "
                    "lists it as `device`, then rerun; what was measured is kept"
                )
            if now >= next_report:
                say(
                    f"{self.name}: {now - start:.0f} s of {self.reconnect_wait_s:g} s ({key}) "
                    f"waiting for {where} to come back after it was lost during {stage}"
                )
                next_report = now + REPORT_S
            time.sleep(1.0)

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
        unauthorized = [s for s, state in attached if state == "unauthorized"]
        if serial in unauthorized or (serial == "auto" and not ready and unauthorized):
            raise AdbDeviceError(
                f"device {self.name} ({serial}) is unauthorized: accept the USB debugging "
                "prompt on the phone (`adb devices` then lists it as `device`), then rerun"
            )
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
        running = shlex.quote(f"{self.workdir}/.running")
        # what an invocation killed mid-write left (an engine writes <out>.part-<pid>, then
        # renames it) goes before the next one runs
        litter = shlex.quote(f"{self.workdir}/scratch") + "/*.part-*"
        wrapped = f"rm -f {litter}; " + load_probe_wrapper(command, probe, running)
        result = self._run_line(argv, wrapped, timeout)
        if result.returncode is None:  # past its timeout: ended here, not left running
            self.run(["sh", "-c", stop_running(running)], 30)
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
        except CUT as err:
            raise DeviceLost(f"device {self.name} ({self.serial}) lost: {err}") from err
        return CommandResult(
            argv,
            result.returncode,
            result.stdout,
            result.stderr,
            time.monotonic() - start,
            command_line=line,
        )

    def profile(self, argv, timeout, env, libraries, hz):
        return simpleperf_profile(self, argv, timeout, env, hz)

    def check(self, argv: list[str], timeout: float = 60) -> str:
        result = self.run(argv, timeout)
        if not result.ok:
            raise AdbDeviceError(
                f"on {self.name}: `{quote(argv)}` failed "
                f"({result.returncode}): {result.stderr.strip()}"
            )
        return result.stdout

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
