"""The job of rule describe_model_layout (workflow/rules/models.smk)."""

from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.models.mnn_layout import describe_model


def run(job: Job) -> None:
    log_to(job.log[0])
    write_json(
        job.output.layout,
        {
            "model": job.wildcards.model,
            **describe_model(
                job.input.model,
                Path(job.input.checkpoint[0], "config.json") if job.input.checkpoint else None,
            ),
        },
    )
