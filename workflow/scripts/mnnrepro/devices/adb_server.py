"""The adb server a device is reached through: the `adb` program, the server's address as adb
itself chooses it, the serial wanted, and starting a local server where none listens."""

from __future__ import annotations

import os
import socket
import subprocess

import adbutils

from mnnrepro.errors import ReproError


class AdbDeviceError(ReproError, RuntimeError):
    pass


def adb_binary() -> str:
    """The adb program as adbutils finds it: $ADBUTILS_ADB_PATH, then `adb` on $PATH, then the
    one in its wheel (which has none for Linux aarch64 or Apple Silicon)."""
    try:
        return adbutils.adb_path()
    except adbutils.AdbError as err:
        raise AdbDeviceError(
            f"no adb program: {err}; install Android's platform-tools or set $ADBUTILS_ADB_PATH"
        ) from None


def server_address(spec: dict, environ=None) -> tuple[str, int]:
    """The adb server to use, as adb itself chooses it: the config's `server_host` /
    `server_port`, else $ANDROID_ADB_SERVER_HOST / $ANDROID_ADB_SERVER_PORT, else
    127.0.0.1:5037. A remote server is how artifact committees lend rare phones."""
    environ = os.environ if environ is None else environ
    host = spec.get("server_host") or environ.get("ANDROID_ADB_SERVER_HOST") or "127.0.0.1"
    port = spec.get("server_port") or environ.get("ANDROID_ADB_SERVER_PORT") or 5037
    return host, int(port)


def wanted_serial(spec: dict, environ=None) -> str:
    """The config's `serial`; `auto` means $ANDROID_SERIAL if set (as adb), else the only
    attached device."""
    environ = os.environ if environ is None else environ
    serial = spec.get("serial", "auto")
    return environ.get("ANDROID_SERIAL") or serial if serial == "auto" else serial


def server_listening(port: int, host: str = "127.0.0.1") -> bool:
    # A raw probe: adbutils itself would start a server on the default port 5037 on failure.
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def ensure_server(port: int, host: str = "127.0.0.1") -> None:
    """Start an adb server on this host's port unless one already listens there; a server on
    another host must already run (we cannot start it)."""
    if server_listening(port, host):
        return
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise AdbDeviceError(f"no adb server answers at {host}:{port}")
    proc = subprocess.run(
        [adb_binary(), "-P", str(port), "start-server"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if proc.returncode != 0:
        raise AdbDeviceError(f"could not start the adb server on port {port}: {proc.stderr}")
