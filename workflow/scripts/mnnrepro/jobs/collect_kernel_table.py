"""The job of rule collect_kernel_table (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.attribution import kernel_table, read_profiles
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    kernel_table(read_profiles(job.input.profiles)).to_csv(job.output.table, index=False)
