"""The job of rule build_llamacpp_quantizer (workflow/rules/models.smk)."""

from mnnrepro.engines.llamacpp.build import build_quantizer
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = build_quantizer(
        read_json(job.input.source),
        job.params.build_dir,
        job.output.tool,
        log,
        jobs=job.threads,
        flags=job.params.flags,
    )
    write_json(job.output.record, record)
