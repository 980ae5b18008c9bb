"""The job of rule fetch_ndk (workflow/rules/build.smk)."""

from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.toolchain.ndk import provide_ndk


def run(job: Job) -> None:
    log_to(job.log[0])
    receipt = provide_ndk(job.params.pin, Path(job.output.receipt).parent)
    write_json(job.output.receipt, receipt)
