"""The job of rule fetch_emulation_userland (workflow/rules/emulation.smk)."""

from pathlib import Path

from mnnrepro.devices.userland import provide_userland
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    receipt = provide_userland(job.params.pins, Path(job.output.receipt).parent)
    write_json(job.output.receipt, receipt)
