from mnnrepro.analysis.tables import bench_table_from
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
table = bench_table_from(
    snakemake.input.runs,
    raw_path_mapper(*snakemake.params.raw_roots),
    snakemake.params.max_other_load,
)
table.to_csv(snakemake.output.table, index=False)
