from mnnrepro.build.records import describe_prebuilt
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
spec = snakemake.params.spec
write_json(
    snakemake.output.engine,
    {
        **describe_prebuilt(snakemake.params.name, spec["prebuilt"]["pypi"]),
        "key": snakemake.wildcards.engine,  # results/engines/<key>: name + definition digest
    },
)
