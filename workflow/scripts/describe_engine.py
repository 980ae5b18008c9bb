from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.records import describe_prebuilt

log_to(snakemake.log[0])
spec = snakemake.params.spec
write_json(
    snakemake.output.engine,
    {
        **describe_prebuilt(snakemake.params.name, spec["prebuilt"]["pypi"]),
        "key": snakemake.wildcards.engine,  # results/engines/<key>: name + definition digest
    },
)
