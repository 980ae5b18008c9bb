"""A loopback ADB device: the device side of the ADB wire protocol, on 127.0.0.1.

The real `adb` server (the binary shipped in the adbutils wheel) reaches it with
`adb connect 127.0.0.1:PORT`, exactly as it reaches a phone over Wi-Fi; adbutils then talks
to that server. Nothing on the host side is faked: only the phone is replaced.

Implemented (enough for everything mnnrepro does with a phone):
* transport: CNXN (no AUTH), OPEN / OKAY / WRTE / CLSE with per-WRTE flow control;
* services: `shell:<cmd>` (raw output), `shell,v2[,TERM=..,raw]:<cmd>` (stdout/stderr/exit
  packets; the other shell arguments are accepted and ignored, no pty),
  `sync:` with STAT / LIST / SEND / RECV / DONE / QUIT (protocol v1);
* an Android-like userland in a sandbox directory: `getprop` (from a props file),
  `dumpsys thermalservice|battery`, `logcat -d`; `/proc/cpuinfo` and `/sys/...` in a command
  are mapped to the sandbox's files, so a test device can have a real phone's CPU features
  (tests/data/devices/). Commands run on the host with `/bin/sh -c` inside the sandbox.

Fault injection for tests (`inject`, one-shot, at a chosen moment: when a stream whose service
matches a pattern opens, after a delay): the transport lost (`drop`), the phone rebooting (its
processes gone, files kept, no connection for a while: `reboot`), a phone that never comes back
(`vanish`), the engine killed by the low-memory killer (`kill`: SIGKILL to the command's
processes, the shell around them survives as on Android), an engine that hangs (`stop`:
SIGSTOP), storage full during a push (`full`: the write fails as adbd's does, part of the file
written); `stall` holds a stream before it is served (a moment to interrupt the host at).
`drop_after_opens(n)` closes the connection when the n-th next stream is opened. The screen,
battery and free space the phone reports are files in its sandbox (`dumpsys/`, `df.txt`).

Illustrative property values are the test's own choice, not a real phone's.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import threading
import time
from pathlib import Path

A_CNXN, A_OPEN, A_OKAY, A_WRTE, A_CLSE, A_AUTH = (
    0x4E584E43,
    0x4E45504F,
    0x59414B4F,
    0x45545257,
    0x45534C43,
    0x48545541,
)
VERSION = 0x01000001
AUTH_TOKEN, AUTH_SIGNATURE = 1, 2
MAX_PAYLOAD = 256 * 1024
SHELL_STDOUT, SHELL_STDERR, SHELL_EXIT = 1, 2, 3

USERLAND = {
    "getprop": """#!/bin/sh
props="$ADBD_SANDBOX/props.txt"
if [ $# -eq 0 ]; then sed 's/^\\([^=]*\\)=\\(.*\\)$/[\\1]: [\\2]/' "$props"; exit 0; fi
grep -m1 "^$1=" "$props" | cut -d= -f2-
""",
    "dumpsys": """#!/bin/sh
case "$1" in
  thermalservice) cat "$ADBD_SANDBOX/dumpsys/thermalservice.txt" ;;
  battery) cat "$ADBD_SANDBOX/dumpsys/battery.txt" ;;
  power) cat "$ADBD_SANDBOX/dumpsys/power.txt" ;;
  *) echo "Can't find service: $1"; exit 1 ;;
esac
""",
    "logcat": """#!/bin/sh
cat "$ADBD_SANDBOX/logcat.txt" 2>/dev/null
""",
    # toybox's `df -k` layout; a test sets the free space the phone reports in df.txt
    "df": """#!/bin/sh
if [ -f "$ADBD_SANDBOX/df.txt" ]; then cat "$ADBD_SANDBOX/df.txt"; else /bin/df "$@"; fi
""",
}
# what `kill` and `stop` strike: an engine (its program's name), never the shell around it nor
# a shell's fork before it runs a command (its command line is still the shell's)
COMMANDS = re.compile(r"^(python[\d.]*|llm_bench|llama-bench|mnn_vision)$")
FAULTS = ("drop", "reboot", "vanish", "kill", "stop", "full", "stall")
# Device paths that live in the sandbox: a command's `/sys/...`, `/proc/cpuinfo` and
# `/proc/sys/abi/` are rewritten to the sandbox's copies before the host shell runs it.
SANDBOXED_PATHS = re.compile(r"(?<![\w./-])(/sys/|/proc/cpuinfo\b|/proc/sys/abi/)")


def message(cmd: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    return (
        struct.pack("<6I", cmd, arg0, arg1, len(data), sum(data) & 0xFFFFFFFF, cmd ^ 0xFFFFFFFF)
        + data
    )


# A phone's thermal layout (illustrative values, the shape of real phones' zones): two CPU die
# zones first (thermal_zone0, thermal_zone1), then what phones expose beside them: the
# battery, a hot charger sensor, power-amplifier and PMIC placeholders stuck at 127 and 255
# degrees, a zero and a negative reading, a battery state-of-charge "zone".
PHONE_ZONES = [
    ("cpu-0-0", 38.5),
    ("cpu-1-0", 39.0),
    ("battery", 31.0),
    ("charger-therm", 52.0),
    ("pa-therm0", 127.0),
    ("pmic-tz", 255.0),
    ("ddr-therm", 0.0),
    ("sdm-therm", -40.0),
    ("soc", 87.0),
]
# Android's own view (dumpsys thermalservice, "Current temperatures from HAL"): name, type
# (0 CPU, 2 BATTERY, 3 SKIN), value
PHONE_HAL = [
    ("cpu-0-0-usr", 0, 38.5),
    ("cpu-1-0-usr", 0, 39.0),
    ("battery", 2, 31.0),
    ("skin", 3, 33.5),
]


def thermalservice_text(status: int, hal: list[tuple[str, int, float]]) -> str:
    lines = [f"IsStatusOverride: false\nThermal Status: {status}\n"]
    if hal:
        lines.append("HAL Ready: true\nCurrent temperatures from HAL:\n")
        lines += [
            f"\tTemperature{{mValue={v}, mType={t}, mName={n}, mStatus=0}}\n" for n, t, v in hal
        ]
        lines.append(
            "Current cooling devices from HAL:\n\tCoolingDevice{mValue=0, mType=2, mName=cpu}\n"
        )
    return "".join(lines)


def make_sandbox(
    root: Path,
    props: dict[str, str],
    cpuinfo: str,
    zones: list[tuple[str, float]] = PHONE_ZONES,
    hal: list[tuple[str, int, float]] = PHONE_HAL,
    battery_temp_c: float = 31.0,
    thermal_status: int = 0,
    cpufreq_khz: tuple[int, ...] = (2_000_000, 3_200_000),
    battery_ua_uv: tuple[int, int] | None = (-850_000, 4_012_000),
) -> Path:
    """An Android-like userland in root (bin/, props, /proc/cpuinfo, a phone's thermal zones
    and the HAL temperatures of `dumpsys thermalservice` (PHONE_ZONES, PHONE_HAL), per core
    the cpufreq files a phone has: governor, current and maximum frequency, and the battery's
    power-supply files a phone has: current_now in µA, negative while discharging as on Pixel
    phones, voltage_now in µV; None leaves them out, as on phones that hide them). The values
    are the test's own, illustrative: a test double of the layout, not a measurement."""
    (root / "bin").mkdir(parents=True, exist_ok=True)
    for name, text in USERLAND.items():
        path = root / "bin" / name
        path.write_text(text)
        path.chmod(0o755)
    (root / "props.txt").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    (root / "proc").mkdir(exist_ok=True)
    (root / "proc" / "cpuinfo").write_text(cpuinfo)
    if re.search(r"^Features\s*:.*\bsme\b", cpuinfo, re.M):  # Linux's SME ABI file
        (root / "proc" / "sys" / "abi").mkdir(parents=True, exist_ok=True)
        (root / "proc" / "sys" / "abi" / "sme_default_vector_length").write_text("64\n")
    for i, (kind, temp) in enumerate(zones):
        zone = root / "sys" / "class" / "thermal" / f"thermal_zone{i}"
        zone.mkdir(parents=True, exist_ok=True)
        (zone / "type").write_text(f"{kind}\n")
        (zone / "temp").write_text(f"{int(temp * 1000)}\n")
    for i, khz in enumerate(cpufreq_khz):
        freq = root / "sys" / "devices" / "system" / "cpu" / f"cpu{i}" / "cpufreq"
        freq.mkdir(parents=True, exist_ok=True)
        (freq.parent / "topology").mkdir(exist_ok=True)
        (freq.parent / "topology" / "cluster_id").write_text(f"{i}\n")  # one core per cluster
        (freq / "scaling_governor").write_text("schedutil\n")
        (freq / "scaling_cur_freq").write_text(f"{khz}\n")
        (freq / "cpuinfo_max_freq").write_text(f"{khz}\n")
    if battery_ua_uv is not None:
        supply = root / "sys" / "class" / "power_supply" / "battery"
        supply.mkdir(parents=True, exist_ok=True)
        (supply / "current_now").write_text(f"{battery_ua_uv[0]}\n")
        (supply / "voltage_now").write_text(f"{battery_ua_uv[1]}\n")
        (supply / "type").write_text("Battery\n")
    (root / "dumpsys").mkdir(exist_ok=True)
    (root / "dumpsys" / "thermalservice.txt").write_text(thermalservice_text(thermal_status, hal))
    (root / "dumpsys" / "battery.txt").write_text(
        "Current Battery Service state:\n  AC powered: false\n  USB powered: true\n"
        f"  level: 87\n  temperature: {int(battery_temp_c * 10)}\n"
    )
    (root / "dumpsys" / "power.txt").write_text(
        "POWER MANAGER (dumpsys power)\n  mWakefulness=Awake\n  mStayOn=true\n"
        "Display Power: state=ON\n"
    )
    (root / "data" / "local" / "tmp").mkdir(parents=True, exist_ok=True)
    return root


class Stream:
    """One OPENed service: its own ids, an inbox of host WRTEs and an OKAY gate."""

    def __init__(self, conn: Connection, local_id: int, remote_id: int):
        self.conn, self.local_id, self.remote_id = conn, local_id, remote_id
        self.okay = threading.Semaphore(0)
        self.inbox: list[bytes] = []
        self.ready = threading.Condition()
        self.closed = False
        self.fault: dict | None = None  # a fault injected into this stream's service
        self.proc: subprocess.Popen | None = None

    def write(self, data: bytes) -> None:
        for i in range(0, len(data), self.conn.max_payload):
            if self.closed:
                raise ConnectionError("stream closed")
            self.conn.send(
                message(A_WRTE, self.local_id, self.remote_id, data[i : i + self.conn.max_payload])
            )
            if not self.okay.acquire(timeout=30):
                raise ConnectionError("host did not acknowledge WRTE")

    def read(self, n: int) -> bytes:
        """Exactly n bytes of what the host wrote (sync requests span WRTE packets)."""
        buf = b""
        with self.ready:
            while len(buf) < n:
                while not self.inbox and not self.closed:
                    self.ready.wait(timeout=30)
                if not self.inbox:
                    raise ConnectionError("stream closed while reading")
                chunk = self.inbox.pop(0)
                need = n - len(buf)
                buf += chunk[:need]
                if len(chunk) > need:
                    self.inbox.insert(0, chunk[need:])
        return buf

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            # a connection the fault matrix cut (a reboot, a lost transport) has no one to tell
            with contextlib.suppress(OSError):
                self.conn.send(message(A_CLSE, self.local_id, self.remote_id))


class Connection:
    def __init__(self, device: LoopbackAdbDevice, sock: socket.socket):
        self.device, self.sock = device, sock
        self.lock = threading.Lock()
        self.streams: dict[int, Stream] = {}
        self.next_id = 1
        self.max_payload = 4096

    def send(self, data: bytes) -> None:
        with self.lock:
            self.sock.sendall(data)

    def recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("host closed the connection")
            buf += chunk
        return buf

    def shutdown(self) -> None:
        """The transport lost: the socket closed under both ends."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def serve(self) -> None:
        self.device.connections.add(self)
        try:
            while True:
                cmd, arg0, arg1, length, _crc, _magic = struct.unpack("<6I", self.recv_exact(24))
                data = self.recv_exact(length) if length else b""
                self.dispatch(cmd, arg0, arg1, data)
        except (ConnectionError, OSError):
            pass
        finally:
            for stream in self.streams.values():
                stream.closed = True
                with stream.ready:
                    stream.ready.notify_all()
                stream.okay.release()
            self.sock.close()
            self.device.connections.discard(self)

    def dispatch(self, cmd, arg0, arg1, data) -> None:
        if cmd == A_CNXN and self.device.unauthorized:  # asks the host to sign a token
            self.send(message(A_AUTH, AUTH_TOKEN, 0, os.urandom(20)))
        elif cmd == A_CNXN:
            self.max_payload = min(arg1, MAX_PAYLOAD)
            self.send(message(A_CNXN, VERSION, MAX_PAYLOAD, self.device.banner()))
        elif cmd == A_AUTH and arg0 == AUTH_SIGNATURE:  # no key is accepted: ask again
            self.send(message(A_AUTH, AUTH_TOKEN, 0, os.urandom(20)))
        elif cmd == A_AUTH:  # the host's public key: the phone shows its prompt, nobody accepts
            pass
        elif cmd == A_OPEN:
            service = data.rstrip(b"\0").decode()
            if self.device.should_drop():
                self.shutdown()
                return
            local_id, self.next_id = self.next_id, self.next_id + 1
            stream = Stream(self, local_id, arg0)
            self.streams[local_id] = stream
            stream.fault = self.device.fault_for(service, self, stream)
            self.send(message(A_OKAY, local_id, arg0))
            threading.Thread(
                target=self.device.run_service, args=(stream, service), daemon=True
            ).start()
        elif cmd == A_OKAY:
            stream = self.streams.get(arg1)
            if stream:
                stream.okay.release()
        elif cmd == A_WRTE:
            stream = self.streams.get(arg1)
            if stream:
                with stream.ready:
                    stream.inbox.append(data)
                    stream.ready.notify_all()
                self.send(message(A_OKAY, arg1, arg0))
        elif cmd == A_CLSE:
            stream = self.streams.pop(arg1, None)
            if stream:
                stream.closed = True
                with stream.ready:
                    stream.ready.notify_all()
                stream.okay.release()


class LoopbackAdbDevice:
    """Listen on 127.0.0.1:port (outside adb's 5555-5585 emulator scan) and serve."""

    def __init__(self, sandbox: Path, props: dict[str, str], port: int = 0):
        self.sandbox = Path(sandbox)
        self.props = props
        self.server = socket.create_server(("127.0.0.1", port))
        self.port = self.server.getsockname()[1]
        self._drop_at: int | None = None
        self._lock = threading.Lock()
        self.opened: list[str] = []
        self.connections: set[Connection] = set()
        self.processes: set[subprocess.Popen] = set()
        self.faults: list[dict] = []  # injected, not yet struck
        self.struck: list[dict] = []  # struck, with the service they struck
        self.on_strike = None  # called with each fault as it strikes (a test's snapshot)
        self.unauthorized = False  # answer a connection with AUTH, accept no key (a new host)
        threading.Thread(target=self._accept, args=(self.server,), daemon=True).start()

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.port}"

    def banner(self) -> bytes:
        keys = ("ro.product.name", "ro.product.model", "ro.product.device")
        props = ";".join(f"{k}={self.props.get(k, '')}" for k in keys)
        return f"device::{props};features=shell_v2,cmd\0".encode()

    def drop_after_opens(self, n: int) -> None:
        with self._lock:
            self._drop_at = len(self.opened) + n

    def should_drop(self) -> bool:
        with self._lock:
            self.opened.append("")
            if self._drop_at is not None and len(self.opened) >= self._drop_at:
                self._drop_at = None
                return True
            return False

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                sock, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=Connection(self, sock).serve, daemon=True).start()

    def close(self) -> None:
        self.server.close()

    # ---- faults ---------------------------------------------------------------------

    def inject(
        self, match: str, fault: str, after_s: float = 0.0, down_s: float = 0.0, nth: int = 1
    ) -> None:
        """One fault (FAULTS) when the next stream whose service matches the regex `match`
        opens, after_s seconds into it: `reboot` keeps the phone away down_s seconds, `stall`
        holds the stream down_s seconds before serving it; nth: the nth matching stream."""
        assert fault in FAULTS, fault
        with self._lock:
            self.faults.append(
                {
                    "match": match,
                    "fault": fault,
                    "after_s": after_s,
                    "down_s": down_s,
                    "nth": nth,
                }  # strikes the nth stream that matches
            )

    def fault_for(self, service: str, conn: Connection, stream: Stream) -> dict | None:
        """The injected fault this service sets off (then it is spent), started. (`full`
        strikes a file's SEND, matched on its path: take_full.)"""
        fault = self._take(service, lambda f: f["fault"] != "full")
        if fault is None:
            return None
        act = {
            "drop": conn.shutdown,
            "reboot": lambda: self.reboot(fault["down_s"]),
            "vanish": lambda: self.reboot(None),
            "kill": lambda: self.signal_command(stream, signal.SIGKILL, fault["after_s"]),
            "stop": lambda: self.signal_command(stream, signal.SIGSTOP, fault["after_s"]),
        }.get(fault["fault"])
        if act is not None:
            delay = 0.0 if fault["fault"] in ("kill", "stop") else fault["after_s"]
            timer = threading.Timer(delay, act)
            timer.daemon = True
            timer.start()
        return fault

    def _take(self, what: str, kind) -> dict | None:
        """The first injected fault of kind (a predicate) whose pattern matches what, spent."""
        with self._lock:
            fault = next((f for f in self.faults if kind(f) and re.search(f["match"], what)), None)
            if fault is not None and fault["nth"] > 1:  # not yet this one
                fault["nth"] -= 1
                fault = None
            if fault is not None:
                self.faults.remove(fault)
                self.struck.append({**fault, "service": what})
        if fault is not None and self.on_strike is not None:
            self.on_strike(fault)
        return fault

    def take_full(self, path: str) -> bool:
        """Whether writing path meets a full disk (an injected `full` fault)."""
        return self._take(path, lambda f: f["fault"] == "full") is not None

    def reboot(self, down_s: float | None) -> None:
        """Every connection closed and every process killed; the files stay. No connection is
        accepted for down_s seconds (None: never again)."""
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accept: the port is free
        self.server.close()
        for conn in list(self.connections):
            conn.shutdown()
        for proc in list(self.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        if down_s is not None:
            time.sleep(down_s)
            self.come_back()

    def come_back(self) -> None:
        """Accept connections again on the same port (after a reboot, or a vanish)."""
        self.server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self.server,), daemon=True).start()

    @staticmethod
    def signal_command(stream: Stream, signum: int, after_s: float) -> None:
        """Signal what the stream's shell runs (an engine, COMMANDS), not the shell itself
        (Android's low-memory killer ends the engine; the shell around it reports its exit
        code): as soon as it runs, after after_s seconds."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            proc = stream.proc
            if proc is not None and proc.poll() is not None:
                return  # its shell has ended (and its process id may be another's soon)
            pids = [] if proc is None else descendants(proc.pid, COMMANDS)
            if pids:
                time.sleep(after_s)
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signum)
                return
            time.sleep(0.002)

    # ---- services -------------------------------------------------------------------

    def run_service(self, stream: Stream, service: str) -> None:
        self.opened[-1] = service
        if stream.fault and stream.fault["fault"] == "stall":
            time.sleep(stream.fault["down_s"])
        try:
            name, _, command = service.partition(":")
            # `shell[,arg...]:cmd` as adbd parses it: the adb program sends e.g.
            # `shell,v2,TERM=xterm,raw:cmd`, adbutils `shell,v2:cmd`
            if name.split(",")[0] == "shell":
                self.shell(stream, command, v2="v2" in name.split(",")[1:])
            elif service == "sync:":
                self.sync(stream)
        except ConnectionError:
            pass
        finally:
            stream.close()

    def shell(self, stream: Stream, command: str, v2: bool) -> None:
        env = {
            "PATH": f"{self.sandbox / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "ADBD_SANDBOX": str(self.sandbox),
            "HOME": str(self.sandbox),
            "LANG": "C.UTF-8",
        }
        for key in ("PYTHONPATH", "VIRTUAL_ENV"):  # the host's Python stands in for the device's
            if key in os.environ:
                env[key] = os.environ[key]
        env["PATH"] += ":" + os.path.dirname(shutil.which("python3") or "/usr/bin/python3")
        command = SANDBOXED_PATHS.sub(lambda m: f"{self.sandbox}{m.group(1)}", command)
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=self.sandbox,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own session: a fault signals what it runs
        )
        stream.proc = proc
        self.processes.add(proc)
        try:
            stdout, stderr = proc.communicate()
        finally:
            self.processes.discard(proc)
        if not v2:
            stream.write(stdout + stderr)
            return
        for kind, payload in ((SHELL_STDOUT, stdout), (SHELL_STDERR, stderr)):
            if payload:
                stream.write(struct.pack("<BI", kind, len(payload)) + payload)
        stream.write(struct.pack("<BI", SHELL_EXIT, 1) + bytes([proc.returncode & 0xFF]))

    def sync(self, stream: Stream) -> None:
        while True:
            cmd, length = struct.unpack("<4sI", stream.read(8))
            if cmd == b"QUIT":
                return
            arg = stream.read(length).decode()
            if cmd == b"STAT":
                try:
                    st = os.stat(arg)
                    stream.write(
                        b"STAT"
                        + struct.pack("<3I", st.st_mode, st.st_size & 0xFFFFFFFF, int(st.st_mtime))
                    )
                except OSError:
                    stream.write(b"STAT" + struct.pack("<3I", 0, 0, 0))
            elif cmd == b"LIST":
                for name in sorted(os.listdir(arg)) if os.path.isdir(arg) else []:
                    st = os.lstat(os.path.join(arg, name))
                    raw = name.encode()
                    stream.write(
                        b"DENT"
                        + struct.pack(
                            "<4I", st.st_mode, st.st_size & 0xFFFFFFFF, int(st.st_mtime), len(raw)
                        )
                        + raw
                    )
                stream.write(b"DONE" + bytes(16))
            elif cmd == b"SEND":
                self._receive_file(stream, arg)
            elif cmd == b"RECV":
                try:
                    data = Path(arg).read_bytes()
                except OSError as err:
                    msg = str(err).encode()
                    stream.write(b"FAIL" + struct.pack("<I", len(msg)) + msg)
                    continue
                for i in range(0, len(data), 64 * 1024):
                    chunk = data[i : i + 64 * 1024]
                    stream.write(b"DATA" + struct.pack("<I", len(chunk)) + chunk)
                stream.write(b"DONE" + bytes(4))
            else:
                msg = f"unknown sync command {cmd!r}".encode()
                stream.write(b"FAIL" + struct.pack("<I", len(msg)) + msg)
                return

    def _receive_file(self, stream: Stream, spec: str) -> None:
        path, _, mode = spec.rpartition(",")
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        full = self.take_full(path)
        written = 0
        with open(target, "wb") as fh:
            while True:
                cmd, length = struct.unpack("<4sI", stream.read(8))
                if cmd == b"DATA":
                    data = stream.read(length)
                    if not full or written == 0:  # a full disk takes the first chunk only
                        fh.write(data)
                        written += len(data)
                elif cmd == b"DONE":
                    break
                else:
                    raise ConnectionError(f"unexpected {cmd!r} in SEND")
        if full:  # as adbd: the rest drained, then FAIL with the write's error
            msg = b"No space left on device"
            stream.write(b"FAIL" + struct.pack("<I", len(msg)) + msg)
            return
        target.chmod(stat.S_IMODE(int(mode)) or 0o644)
        stream.write(b"OKAY" + bytes(4))


def descendants(pid: int, commands: re.Pattern) -> list[int]:
    """pid's children, grandchildren, ... (Linux's /proc/<pid>/task/*/children) whose program's
    name matches commands."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                children = [int(c) for c in task.read_text().split()]
            except OSError:
                continue
            for child in children:
                todo.append(child)
                try:
                    program = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0]
                except OSError:
                    continue
                if commands.search(os.path.basename(program.decode(errors="replace"))):
                    found.append(child)
    return found
