"""The job of rule collect_bench_table (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.tables import bench_table_from
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    table = bench_table_from(
        job.input.runs,
        raw_path_mapper(*job.params.raw_roots),
        job.params.max_other_load,
    )
    table.to_csv(job.output.table, index=False)
