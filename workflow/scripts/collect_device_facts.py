from mnnrepro.device import make_device
from mnnrepro.hashing import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
device = make_device(snakemake.wildcards.device, snakemake.params.spec)
try:
    write_json(snakemake.output.facts, device.facts())
finally:
    device.close()
