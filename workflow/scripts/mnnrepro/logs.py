"""Point a rule script's stderr and logging at its Snakemake log file."""

from __future__ import annotations

import logging
import sys


def log_to(path: str):
    """Send stderr and the logging module to path; returns the open log file."""
    handle = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the job
    sys.stderr = handle
    logging.basicConfig(
        stream=handle,
        level=logging.INFO,
        force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return handle
