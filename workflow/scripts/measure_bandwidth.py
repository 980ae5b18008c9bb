from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.bandwidth import measure_bandwidth
from mnnrepro.runs.on_device import on_device

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
    stage = "the bandwidth probe"
    with on_device(snakemake.wildcards.device, snakemake.params.device, stage) as device:
        result = measure_bandwidth(
            device,
            read_json(snakemake.input.facts),
            probes,
            snakemake.params.bandwidth,
            snakemake.params.bench,
            snakemake.params.variant_threads,
        )
write_json(snakemake.output.bandwidth, {"experiment": snakemake.wildcards.experiment, **result})
