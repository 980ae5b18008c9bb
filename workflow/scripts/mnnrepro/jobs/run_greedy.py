"""The job of rule run_greedy (workflow/rules/bench.smk)."""

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.runs.gate_job import GateJob


def run(job: Job) -> None:
    log_to(job.log[0])
    write_json(job.output.greedy, GateJob.of(job).answers())
