from mnnrepro.devices.factory import make_device
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.bandwidth import measure_bandwidth
from mnnrepro.runs.device_lock import holding

log_to(snakemake.log[0])
probes = {
    engine: {"record": record, "dir": directory}
    for engine, record, directory in zip(
        snakemake.params.engine_names,
        snakemake.input.records,
        snakemake.input.probes,
        strict=True,
    )
}
if not probes:  # an emulated device: its memory is the host's, seen through QEMU
    result = {
        "device": snakemake.wildcards.device,
        "emulated": True,
        "skipped": "emulated device: no bandwidth measured",
        "measurements": [],
        "engines": {},
    }
else:
    device = make_device(snakemake.wildcards.device, snakemake.params.device)
    try:
        with holding(
            device.lock_key, device.name, device.lock_wait_s
        ):  # one job per device at a time
            result = measure_bandwidth(
                device,
                read_json(snakemake.input.facts),
                probes,
                snakemake.params.bandwidth,
                snakemake.params.bench,
                snakemake.params.variant_threads,
            )
    finally:
        device.close()
write_json(snakemake.output.bandwidth, {"experiment": snakemake.wildcards.experiment, **result})
