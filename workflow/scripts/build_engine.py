from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.records import BuildJob

log = log_to(snakemake.log[0])
source = read_json(snakemake.input.source)
ndk = read_json(snakemake.input.ndk[0]) if snakemake.input.ndk else None
kind = kind_of_spec(snakemake.params.spec)
info = kind.build(
    BuildJob(
        engine=snakemake.params.name,
        source=source,
        spec=snakemake.params.spec[kind.config_key],
        build_dir=snakemake.params.build_dir,
        engine_dir=snakemake.output.bin,
        log_file=log,
        ndk=ndk,
        jobs=snakemake.threads,
    )
)
info["key"] = snakemake.wildcards.engine  # results/engines/<key>: name + definition digest
write_json(snakemake.output.build, info)
