"""The job of rule collect_sweep_table (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.sweep import sweep_table
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    sweep_table(
        job.input.runs,
        raw_path_mapper(*job.params.raw_roots),
        job.params.max_other_load,
    ).to_csv(job.output.table, index=False)
