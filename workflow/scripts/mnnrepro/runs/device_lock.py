"""One invocation per device at a time, different devices in parallel.

A Snakemake resource is a global count, so `device=1` serialised every phone behind every
other. Instead each job that runs on a device holds an exclusive lock on that device while it
runs: an OS file lock (flock) on `<temp dir>/mnnrepro-device-locks/<key>.lock`, keyed by what
the device is (an adb server's address and the phone's serial on it; for the local host and
its QEMU devices, the host itself, since they share its CPUs). The lock lives outside the
working directory, so two experiments in different directories on the same phone do not
overlap either; the OS releases it when the process ends, however it ends."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_DIR = Path(tempfile.gettempdir()) / "mnnrepro-device-locks"


def lock_path(key: str) -> Path:
    return LOCK_DIR / (re.sub(r"[^A-Za-z0-9._-]", "_", key) + ".lock")


@contextlib.contextmanager
def holding(key: str, what: str = ""):
    """Hold the device lock `key` for the body; waits (saying so) while another job holds it.
    Yields the seconds waited."""
    path = lock_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        start = time.monotonic()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for %s (%s): another job is running on it", key, what)
            print(f"{what or key}: waiting for another job on the same device", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()} {what}\n")
        handle.flush()
        try:
            yield round(time.monotonic() - start, 3)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
