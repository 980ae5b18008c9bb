"""The job of rule plot (workflow/rules/plots.smk)."""

from mnnrepro.analysis.jobs import draw_charts
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    draw_charts(job)
