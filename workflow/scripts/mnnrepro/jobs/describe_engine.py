"""The job of rule describe_engine (workflow/rules/engines.smk)."""

from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    spec = job.params.spec
    write_json(
        job.output.engine,
        {
            **kind_of_spec(spec).describe(job.params.name, spec),
            "key": job.wildcards.engine,  # results/engines/<key>: name + definition digest
        },
    )
