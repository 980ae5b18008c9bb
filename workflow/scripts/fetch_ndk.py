from pathlib import Path

from mnnrepro.build.ndk import provide_ndk
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
receipt = provide_ndk(snakemake.params.pin, Path(snakemake.output.receipt).parent)
write_json(snakemake.output.receipt, receipt)
