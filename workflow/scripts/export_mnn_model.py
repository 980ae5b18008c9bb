from mnnrepro.files import file_table, write_json
from mnnrepro.logs import log_to
from mnnrepro.models.export import export_model, export_settings
from mnnrepro.models.spec import Model

log = log_to(snakemake.log[0])
source, settings, extra = export_settings(
    Model.of(snakemake.wildcards.model, snakemake.params.spec)
)
manifest = export_model(
    snakemake.input.hf,
    snakemake.output.model,
    settings["quant_bit"],
    settings["quant_block"],
    log,
    extra,
)
manifest.update(
    model=snakemake.wildcards.model,
    source=source,
    spec=settings,
    input_files=file_table(snakemake.input.hf),
)
write_json(snakemake.output.manifest, manifest)
