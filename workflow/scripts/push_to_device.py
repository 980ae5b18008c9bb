from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.on_device import on_device, surviving
from mnnrepro.runs.staging import push_receipt

log = log_to(snakemake.log[0])
with on_device(snakemake.wildcards.device, snakemake.params.device, "the push") as device:
    receipt = surviving(
        device,
        "the push",  # pushed again: what arrived whole is skipped by its hash
        lambda: push_receipt(
            device,
            dict(zip(snakemake.params.model_formats, snakemake.input.model, strict=True)),
            snakemake.wildcards.model,
            dict(zip(snakemake.params.engine_names, snakemake.input.engines, strict=True)),
            dict(zip(snakemake.params.tool_engines, snakemake.input.gate_tools, strict=True)),
            snakemake.input.sme_mask[0] if snakemake.input.sme_mask else None,
        ),
    )
print(
    f"pushed {receipt['bytes_pushed']} bytes, {receipt['files_skipped']} files unchanged", file=log
)
write_json(snakemake.output.receipt, receipt)
