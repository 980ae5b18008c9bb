from mnnrepro.devices.factory import make_device
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.device_lock import holding

log_to(snakemake.log[0])
device = make_device(snakemake.wildcards.device, snakemake.params.spec)
try:
    with holding(device.lock_key, device.name, device.lock_wait_s):  # facts of an idle device
        write_json(snakemake.output.facts, device.facts())
finally:
    device.close()
