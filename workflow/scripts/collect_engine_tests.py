from mnnrepro.analysis.engine_tests import engine_tests_table
from mnnrepro.files import read_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
table = engine_tests_table([read_json(p) for p in snakemake.input.tests])
table.to_csv(snakemake.output.table, index=False)
