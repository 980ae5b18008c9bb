from mnnrepro.analysis.validity import check
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
engines = {e["engine"]: e for e in map(read_json, snakemake.input.engines)}
result = check(
    read_json(snakemake.input.greedy),
    read_json(snakemake.input.facts),
    snakemake.wildcards.model,
    snakemake.params.comparison,
    snakemake.params.correctness,
    engines,
    snakemake.params.variants,
)
write_json(snakemake.output.validity, result)
