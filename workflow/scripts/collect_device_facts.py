from mnnrepro.devices.factory import make_device
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
device = make_device(snakemake.wildcards.device, snakemake.params.spec)
try:
    write_json(snakemake.output.facts, device.facts())
finally:
    device.close()
