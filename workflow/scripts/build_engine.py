from mnnrepro.build.cmake import build_engine
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
source = read_json(snakemake.input.source)
ndk = read_json(snakemake.input.ndk[0]) if snakemake.input.ndk else None
info = build_engine(
    snakemake.params.name,
    source,
    snakemake.params.spec,
    snakemake.params.build_dir,
    snakemake.output.bin,
    log,
    ndk=ndk,
    jobs=snakemake.threads,
    extra_flags=source.get("cmake_flags", {}),
)
info["key"] = snakemake.wildcards.engine  # results/engines/<key>: name + definition digest
write_json(snakemake.output.build, info)
