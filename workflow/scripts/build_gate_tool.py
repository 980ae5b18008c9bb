from mnnrepro.build.tools import build_gate_tool
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
record = build_gate_tool(
    read_json(snakemake.input.build),
    read_json(snakemake.input.source),
    snakemake.input.bin,
    snakemake.params.build_dir,
    snakemake.output.tool,
    log,
)
write_json(snakemake.output.record, record)
