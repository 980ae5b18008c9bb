from mnnrepro.hashing import read_json
from mnnrepro.logs import log_to
from mnnrepro.tables import bench_table

log_to(snakemake.log[0])
table = bench_table([read_json(path) for path in snakemake.input.runs])
table.to_csv(snakemake.output.table, index=False)
