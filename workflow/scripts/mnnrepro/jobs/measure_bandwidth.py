"""The job of rule measure_bandwidth (workflow/rules/bench.smk)."""

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.runs.bandwidth import bandwidth_job


def run(job: Job) -> None:
    log_to(job.log[0])
    result = bandwidth_job(job)
    write_json(job.output.bandwidth, {"experiment": job.wildcards.experiment, **result})
