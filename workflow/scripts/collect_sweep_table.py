from mnnrepro.analysis.sweep import sweep_table
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
sweep_table(
    snakemake.input.runs,
    raw_path_mapper(*snakemake.params.raw_roots),
    snakemake.params.max_other_load,
).to_csv(snakemake.output.table, index=False)
