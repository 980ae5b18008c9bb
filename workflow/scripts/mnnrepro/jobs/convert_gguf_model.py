"""The job of rule convert_gguf_model (workflow/rules/models.smk)."""

from mnnrepro.engines.llamacpp.gguf import convert
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = convert(
        job.input.hf,
        read_json(job.input.source),
        job.input.quantizer,
        job.output.model,
        log,
    )
    write_json(job.output.record, {"model": job.wildcards.model, **record})
    write_json(job.output.layout, {"model": job.wildcards.model, **record["layout"]})
