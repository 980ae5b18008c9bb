"""The job of rule compute_sweep_summary (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.jobs import write_sweep_summary
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    write_sweep_summary(job, raw_path_mapper(*job.params.raw_roots))
