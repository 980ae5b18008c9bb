from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
spec = snakemake.params.spec
write_json(
    snakemake.output.engine,
    {
        **kind_of_spec(spec).describe(snakemake.params.name, spec),
        "key": snakemake.wildcards.engine,  # results/engines/<key>: name + definition digest
    },
)
