from mnnrepro.analysis.tables import bench_table
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.files import read_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
table = bench_table(
    [read_json(path) for path in snakemake.input.runs], raw_path_mapper(*snakemake.params.raw_roots)
)
table.to_csv(snakemake.output.table, index=False)
