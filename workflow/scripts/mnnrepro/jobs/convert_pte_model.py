"""The job of rule convert_pte_model (workflow/rules/models.smk)."""

from mnnrepro.engines.executorch.export import convert
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    model = job.wildcards.model
    prompts = list(job.params.prompts)  # the gate's (Settings.gate_prompts)
    site, out = job.input.site, job.output.model
    record = convert(model, job.input.hf, site, prompts, out, job.params.cache, log)
    write_json(job.output.record, {"model": model, **record})
    write_json(job.output.layout, {"model": model, **record["layout"]})
