from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.tools import build_bandwidth_probe

log = log_to(snakemake.log[0])
record = build_bandwidth_probe(
    EngineRecord.of(read_json(snakemake.input.engine)),
    snakemake.params.build_dir,
    snakemake.output.probe,
    log,
)
write_json(snakemake.output.record, record)
