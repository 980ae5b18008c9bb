"""The job of rule predict_gain (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.jobs import write_prediction
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    write_prediction(job)
