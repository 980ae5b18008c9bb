from mnnrepro.engines.ort_genai.onnx_genai import convert
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
model = snakemake.wildcards.model
record = convert(
    model,
    snakemake.input.hf,
    snakemake.input.site,
    snakemake.output.model,
    snakemake.params.cache,
    log,
)
write_json(snakemake.output.record, {"model": model, **record})
write_json(snakemake.output.layout, {"model": model, **record["layout"]})
