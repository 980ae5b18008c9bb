from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.ndk import provide_ndk

log_to(snakemake.log[0])
receipt = provide_ndk(snakemake.params.pin, Path(snakemake.output.receipt).parent)
write_json(snakemake.output.receipt, receipt)
