from mnnrepro.export import export_model
from mnnrepro.hashing import write_json
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
spec = snakemake.params.spec
source = next(iter(spec))  # schema: exactly one source
settings = spec[source]
manifest = export_model(
    snakemake.input.hf, snakemake.output.model, settings["quant_bit"], settings["quant_block"], log
)
manifest.update(model=snakemake.wildcards.model, source=source, spec=settings)
write_json(snakemake.output.manifest, manifest)
