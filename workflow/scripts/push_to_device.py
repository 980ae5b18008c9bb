from mnnrepro.devices.factory import make_device
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.device_lock import holding
from mnnrepro.runs.staging import push_receipt

log = log_to(snakemake.log[0])
device = make_device(snakemake.wildcards.device, snakemake.params.device)
try:
    with holding(
        device.lock_key, device.name, device.lock_wait_s
    ):  # never while a benchmark runs on it
        receipt = push_receipt(
            device,
            dict(zip(snakemake.params.model_formats, snakemake.input.model, strict=True)),
            snakemake.wildcards.model,
            dict(zip(snakemake.params.engine_names, snakemake.input.engines, strict=True)),
            dict(zip(snakemake.params.engine_names, snakemake.input.gate_tools, strict=True)),
        )
finally:
    device.close()
print(
    f"pushed {receipt['bytes_pushed']} bytes, {receipt['files_skipped']} files unchanged", file=log
)
write_json(snakemake.output.receipt, receipt)
