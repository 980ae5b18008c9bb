from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.on_device import on_device, surviving

log_to(snakemake.log[0])
stage = "collecting its facts"  # a phone not ready is refused here, before any engine build
with on_device(snakemake.wildcards.device, snakemake.params.spec, stage) as device:
    write_json(snakemake.output.facts, surviving(device, stage, device.facts))
