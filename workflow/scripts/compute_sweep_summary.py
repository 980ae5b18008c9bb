from mnnrepro.analysis.jobs import write_sweep_summary
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
write_sweep_summary(snakemake, raw_path_mapper(*snakemake.params.raw_roots))
