from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.benchmark import run_plan_for_rule
from mnnrepro.runs.vision import vision_phase_images

log_to(snakemake.log[0])
images = vision_phase_images(  # the vision phase: the main benchmark of a model that takes images
    snakemake.params.image_names,
    snakemake.input.images,
    snakemake.params.model_formats,
    snakemake.input.model,
)
index = run_plan_for_rule(
    device_name=snakemake.wildcards.device,
    device_spec=snakemake.params.device,
    receipt=snakemake.input.receipt,
    manifest=snakemake.input.manifest,
    engine_records=snakemake.input.engines,
    variants=snakemake.params.variants,
    bench=snakemake.params.bench,
    raw_dir=snakemake.params.raw_dir,
    pairs=[tuple(p) for p in snakemake.params.pairs],
    ci_level=snakemake.params.ci_level,
    remeasure=snakemake.params.remeasure,
    images=images,
    gate_tools=snakemake.input.gate_tools,
    comparison=snakemake.params.comparison,
    facts=snakemake.input.facts,
)
index.update(experiment=snakemake.wildcards.experiment, model=snakemake.wildcards.model)
if snakemake.params.point:  # a sweep point (rule run_sweep)
    index.update(point=snakemake.params.point, bench=snakemake.params.bench)
write_json(snakemake.output.runs, index)
