from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.profile import profile_for_rule
from mnnrepro.runs.vision import vision_phase_images

log_to(snakemake.log[0])
index = profile_for_rule(
    device_name=snakemake.wildcards.device,
    device_spec=snakemake.params.device,
    receipt=snakemake.input.receipt,
    manifest=snakemake.input.manifest,
    engine_records=snakemake.input.engines,
    variants=snakemake.params.variants,
    bench=snakemake.params.bench,
    attribution=snakemake.params.attribution,
    out_dir=snakemake.params.out_dir,
    images=vision_phase_images(
        snakemake.params.image_names,
        snakemake.input.images,
        snakemake.params.model_formats,
        snakemake.input.model,
    ),
    gate_tools=snakemake.input.gate_tools,
)
index.update(experiment=snakemake.wildcards.experiment, model=snakemake.wildcards.model)
write_json(snakemake.output.index, index)
