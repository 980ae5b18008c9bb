from mnnrepro.hashing import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.validity import check

log_to(snakemake.log[0])
write_json(
    snakemake.output.validity,
    check(
        read_json(snakemake.input.greedy),
        read_json(snakemake.input.facts),
        snakemake.wildcards.model,
        snakemake.params.comparison,
        snakemake.params.correctness,
    ),
)
