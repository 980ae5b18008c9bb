"""Point a rule script's stderr and logging at its Snakemake log file, and show the project's
own errors as the one line they are."""

from __future__ import annotations

import logging
import sys

from mnnrepro.errors import ReproError

REPORT_S = 30.0  # a job that waits (for a device's lock, for a phone to cool or come back)
# says what it waits for at once and this often


def say(text: str) -> None:
    """A wait's progress: in the job's log and on the terminal."""
    logging.getLogger("mnnrepro.wait").info("%s", text)
    print(text, flush=True)


def one_line_errors(kind, error, trace) -> None:
    """sys.excepthook: a ReproError (worded for the user, naming the file or key) is printed
    as `error: <message>` without a traceback; anything else is a bug and keeps its traceback."""
    if issubclass(kind, ReproError):
        print(f"error: {error}", file=sys.stderr, flush=True)
    else:
        sys.__excepthook__(kind, error, trace)


# the job this process runs, named by its log file (logs/<rule>/<wildcards>.log): a device lock
# says whose job holds it (runs/device_lock.py)
THIS_JOB = {"log": ""}


def log_to(path: str):
    """Send stderr and the logging module to path; returns the open log file."""
    THIS_JOB["log"] = str(path)
    handle = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the job
    sys.stderr = handle
    sys.excepthook = one_line_errors
    logging.basicConfig(
        stream=handle,
        level=logging.INFO,
        force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return handle
