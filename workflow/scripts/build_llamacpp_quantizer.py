from mnnrepro.engines.llamacpp.build import build_quantizer
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
record = build_quantizer(
    read_json(snakemake.input.source),
    snakemake.params.build_dir,
    snakemake.output.tool,
    log,
    jobs=snakemake.threads,
    flags=snakemake.params.flags,
)
write_json(snakemake.output.record, record)
