from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.job import DeviceJob
from mnnrepro.runs.profile import profile_for_rule

log_to(snakemake.log[0])
index = profile_for_rule(
    DeviceJob.of(snakemake),
    attribution=snakemake.params.attribution,
    out_dir=snakemake.params.out_dir,
)
index.update(experiment=snakemake.wildcards.experiment, model=snakemake.wildcards.model)
write_json(snakemake.output.index, index)
