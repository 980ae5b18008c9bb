"""The job of rule archive_results (workflow/rules/archive.smk)."""

from mnnrepro.archive.pack import archive_job
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    archive_job(job)
