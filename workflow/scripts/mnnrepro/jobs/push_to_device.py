"""The job of rule push_to_device (workflow/rules/bench.smk)."""

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.runs.on_device import on_device, surviving
from mnnrepro.runs.staging import push_receipt


def run(job: Job) -> None:
    log = log_to(job.log[0])
    with on_device(job.wildcards.device, job.params.device, "the push") as device:
        receipt = surviving(
            device,
            "the push",  # pushed again: what arrived whole is skipped by its hash
            lambda: push_receipt(
                device,
                dict(zip(job.params.model_formats, job.input.model, strict=True)),
                job.wildcards.model,
                dict(zip(job.params.engine_names, job.input.engines, strict=True)),
                dict(zip(job.params.tool_engines, job.input.gate_tools, strict=True)),
                job.input.sme_mask[0] if job.input.sme_mask else None,
            ),
        )
    print(
        f"pushed {receipt['bytes_pushed']} bytes, {receipt['files_skipped']} files unchanged",
        file=log,
    )
    write_json(job.output.receipt, receipt)
