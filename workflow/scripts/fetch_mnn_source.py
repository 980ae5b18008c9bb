from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.source import provide_source

log_to(snakemake.log[0])
receipt = provide_source(
    snakemake.params.source,
    snakemake.params.kleidiai,
    Path(snakemake.output.receipt).parent,
    snakemake.params.get("patches", []),
)
write_json(snakemake.output.receipt, receipt)
