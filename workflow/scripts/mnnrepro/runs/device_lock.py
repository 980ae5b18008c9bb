"""One invocation per device at a time, different devices in parallel.

A Snakemake resource is a global count, so `device=1` serialised every phone behind every
other. Instead each job that runs on a device holds an exclusive lock on that device while it
runs: an OS file lock (flock) on `<temp dir>/mnnrepro-device-locks/<key>.lock`, keyed by what
the device is (an adb server's address and the phone's serial on it; for the local host and
its QEMU devices, the host itself, since they share its CPUs: the emulated devices hold it
shared, beside each other, since their timings are recorded and never judged, and never
beside a job of the host's own, whose timings are). The lock lives outside the
working directory, so two experiments in different directories on the same phone do not
overlap either; the OS releases it when the process ends, however it ends."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.logs import REPORT_S, THIS_JOB, say

log = logging.getLogger(__name__)

LOCK_DIR = Path(tempfile.gettempdir()) / "mnnrepro-device-locks"


def lock_path(key: str) -> Path:
    return LOCK_DIR / (re.sub(r"[^A-Za-z0-9._-]", "_", key) + ".lock")


POLL_S = 0.5


@contextlib.contextmanager
def holding(
    key: str,
    what: str = "",
    wait_s: float | None = None,
    report_s: float = REPORT_S,
    shared: bool = False,
):
    """Hold the device lock `key` for the body (shared: beside other shared holders, never
    beside an exclusive one). While another job holds it, say who (its job, working
    directory, process and since when) at once and every report_s seconds; past wait_s
    (None: never) end with one line naming the holder. Yields the seconds waited."""
    path = lock_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        start = time.monotonic()
        wait_for(handle, path, what or key, wait_s, report_s, shared)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(holder_record(what)) + "\n")
        handle.flush()
        try:
            yield round(time.monotonic() - start, 3)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def wait_for(
    handle, path: Path, what: str, wait_s: float | None, report_s: float, shared: bool = False
) -> None:
    """Take the lock on handle, saying who holds it meanwhile (holder_text)."""
    start = next_report = time.monotonic()
    while True:
        try:
            fcntl.flock(handle, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            now = time.monotonic()
            waited = now - start
            if wait_s is not None and waited >= wait_s:
                raise ReproError(
                    f"config key `devices.{what}.lock_wait_s`: the device is still busy after "
                    f"{wait_s:g} s, held by {holder_text(path)}; wait for that job, stop it, "
                    "or raise lock_wait_s"
                ) from None
            if now >= next_report:
                say(f"{what}: waiting {waited:.0f} s for the device, held by {holder_text(path)}")
                next_report = now + report_s
            time.sleep(POLL_S)


def holder_record(what: str) -> dict:
    """Who holds a device lock, as its file says: the device, the job (its log file), the
    working directory, the process and since when."""
    return {
        "device": what,
        "job": THIS_JOB["log"],
        "workdir": os.getcwd(),
        "pid": os.getpid(),
        "since": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def holder_text(path: Path) -> str:
    """The holder's record in words; a lock whose holder has not written it yet (or an older
    workflow's) is 'another job'."""
    try:
        record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    except (OSError, ValueError, IndexError):
        return "another job (it has not said which)"
    job = record.get("job") or "a job outside Snakemake"
    return (
        f"{job} in {record.get('workdir')} (process {record.get('pid')}, since "
        f"{record.get('since')})"
    )
