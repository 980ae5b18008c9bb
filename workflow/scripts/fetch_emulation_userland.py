from pathlib import Path

from mnnrepro.devices.userland import provide_userland
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
receipt = provide_userland(snakemake.params.pins, Path(snakemake.output.receipt).parent)
write_json(snakemake.output.receipt, receipt)
