"""The job of rule export_mnn_model (workflow/rules/models.smk)."""

from mnnrepro.files import file_table, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.models.export import export_model, export_settings
from mnnrepro.models.spec import Model


def run(job: Job) -> None:
    log = log_to(job.log[0])
    source, settings, extra = export_settings(Model.of(job.wildcards.model, job.params.spec))
    manifest = export_model(
        job.input.hf,
        job.output.model,
        settings["quant_bit"],
        settings["quant_block"],
        log,
        extra,
    )
    manifest.update(
        model=job.wildcards.model,
        source=source,
        spec=settings,
        input_files=file_table(job.input.hf),
    )
    write_json(job.output.manifest, manifest)
