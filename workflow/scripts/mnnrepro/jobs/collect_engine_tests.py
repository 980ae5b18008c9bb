"""The job of rule collect_engine_tests (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.engine_tests import engine_tests_table
from mnnrepro.files import read_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    table = engine_tests_table([read_json(p) for p in job.input.tests])
    table.to_csv(job.output.table, index=False)
