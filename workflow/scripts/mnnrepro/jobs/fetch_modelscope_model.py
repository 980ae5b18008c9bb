"""The job of rule fetch_modelscope_model (workflow/rules/models.smk)."""

from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.models.mnn_files import is_vision_model, missing_files
from mnnrepro.models.modelscope import fetch_model
from mnnrepro.models.spec import Model


def run(job: Job) -> None:
    log_to(job.log[0])
    model = Model.of(job.wildcards.model, job.params.spec)
    repo = model.repository(job.params.route)
    manifest = fetch_model(repo, job.params.cache, job.output[0], job.wildcards.model)
    if job.params.route == "model":  # it must be loadable
        missing = missing_files(Path(job.output[0]))
        if missing:
            raise SystemExit(
                f"models.{job.wildcards.model}.modelscope: {repo['id']}@{repo['revision']} "
                f"is not an MNN LLM directory: {missing} missing"
            )
        manifest["takes_images"] = is_vision_model(job.output[0])
    write_json(job.output.manifest, manifest)
