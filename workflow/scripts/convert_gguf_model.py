from mnnrepro.engines.llamacpp.gguf import convert
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
record = convert(
    snakemake.input.hf,
    read_json(snakemake.input.source),
    snakemake.input.quantizer,
    snakemake.output.model,
    log,
)
write_json(snakemake.output.record, {"model": snakemake.wildcards.model, **record})
write_json(snakemake.output.layout, {"model": snakemake.wildcards.model, **record["layout"]})
