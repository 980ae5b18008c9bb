"""An adb device's files: pushed by hash (skipped where the phone holds the same bytes, written
through a `.part` file renamed once whole, refused up front where they do not fit), verified
before each run, fetched; and a connection cut mid-transfer as the device lost."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import adbutils

from mnnrepro.devices.adb_server import AdbDeviceError
from mnnrepro.devices.base import DeviceLost
from mnnrepro.devices.phone_readings import free_kb_of
from mnnrepro.files import sha256_file

# what adbutils raises when the connection to the phone breaks mid-command: its own errors,
# the socket's, a shell v2 stream cut short (EOFError), a sync reply cut short (its protocol
# asserts the replies it reads)
CUT = (adbutils.AdbError, OSError, EOFError, AssertionError)


@contextlib.contextmanager
def lost_if_cut(device):
    """A command or transfer whose connection breaks: the device lost (runs/on_device)."""
    try:
        yield
    except CUT as err:
        raise DeviceLost(f"device {device.name} ({device.serial}) lost: {err}") from err


class AdbFiles:
    """The file side of AdbDevice (its `dev`, `name`, `workdir`, `run` and `check`)."""

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
        missing = [
            (local, remote) for local, remote in pairs if present.get(remote) != wanted[remote]
        ]
        self.refuse_unless_room(sum(local.stat().st_size for local, _ in missing))
        for local, remote in pairs:
            digest = wanted[remote]
            pushed = present.get(remote) != digest
            if pushed:
                self.check(["mkdir", "-p", os.path.dirname(remote)])
                self._push_one(local, remote)
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

    def _push_one(self, local: Path, remote: str) -> None:
        """local to remote through `<remote>.part`, renamed once whole: a push cut short
        never leaves a file under its final name. A write the phone refuses (its storage
        full) ends with one line and removes the part."""
        part = remote + ".part"
        try:
            with lost_if_cut(self):
                self.dev.sync.push(str(local), part)
        except DeviceLost as lost:
            if str(lost.__cause__) != "FAIL":  # adbutils' word for the phone's own refusal
                raise
            err = lost.__cause__
            self.run(["rm", "-f", part], 60)
            raise AdbDeviceError(
                f"device {self.name}: writing {remote} failed ({self.free_kb() // 1024} MB "
                f"free in {self.workdir}, the file is {local.stat().st_size // 2**20} MB): free "
                f"space on the phone or set `devices.{self.name}.adb.workdir` to a larger "
                "partition, then rerun (nothing half-written is kept)"
            ) from err
        self.check(["mv", "-f", part, remote])

    def free_kb(self) -> int:
        """Free space where the workdir is, in KiB, as the phone's `df -k` says (0 if it
        says nothing readable)."""
        return free_kb_of(self.run(["df", "-k", self.workdir], timeout=30).stdout) or 0

    def refuse_unless_room(self, need_bytes: int) -> None:
        """One line, before anything is written, if the files to push do not fit."""
        free = self.free_kb() * 1024
        if need_bytes > free:
            raise AdbDeviceError(
                f"device {self.name}: {self.workdir} has {free // 2**20} MB free, the push "
                f"needs {need_bytes // 2**20} MB (the engine and model files not on the phone "
                f"yet): free space on the phone or set `devices.{self.name}.adb.workdir` to a "
                "larger partition"
            )

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
        with lost_if_cut(self):
            self.dev.sync.pull(device_path, str(local_path))

    def put_text(self, text: str, device_path: str) -> None:
        with lost_if_cut(self):
            self.dev.sync.push(text.encode("utf-8"), device_path)
