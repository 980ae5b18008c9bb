"""The job of rule convert_onnx_model (workflow/rules/models.smk)."""

from mnnrepro.engines.ort_genai.onnx_genai import convert
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    model = job.wildcards.model
    record = convert(
        model,
        job.input.hf,
        job.input.site,
        job.output.model,
        job.params.cache,
        log,
    )
    write_json(job.output.record, {"model": model, **record})
    write_json(job.output.layout, {"model": model, **record["layout"]})
