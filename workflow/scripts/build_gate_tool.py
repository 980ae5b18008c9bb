from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
engine = EngineRecord.of(read_json(snakemake.input.record))
record = engine.kind.build_gate_tool(
    engine,
    read_json(snakemake.input.source[0]) if snakemake.input.source else {},
    snakemake.input.bin,
    snakemake.params.build_dir,
    snakemake.output.tool,
    log,
)
write_json(snakemake.output.record, record)
