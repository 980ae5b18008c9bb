from mnnrepro.design import Design
from mnnrepro.engines.pairs import modes_at
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.benchmark import run_plan_for_rule
from mnnrepro.runs.job import DeviceJob

log_to(snakemake.log[0])
index = run_plan_for_rule(
    DeviceJob.of(snakemake),  # a vision model's main benchmark asks its images; a sweep none
    raw_dir=snakemake.params.raw_dir,
    design=Design.of(snakemake.params.design),
    modes=modes_at(snakemake.input.modes),
    remeasure=snakemake.params.remeasure,
)
index.update(experiment=snakemake.wildcards.experiment, model=snakemake.wildcards.model)
if snakemake.params.point:  # a sweep point (rule run_sweep)
    index.update(point=snakemake.params.point, bench=snakemake.params.bench)
write_json(snakemake.output.runs, index)
