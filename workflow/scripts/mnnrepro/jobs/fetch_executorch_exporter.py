"""The job of rule fetch_executorch_exporter (workflow/rules/models.smk)."""

from mnnrepro.engines.executorch.fetch import fetch_exporter
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = fetch_exporter(job.params.pins, job.params.cache, job.output.site)
    write_json(job.output.record, record)
    print(f"fetched executorch {record['version']}'s exporter", file=log)
