from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.tools import build_sme_mask

log = log_to(snakemake.log[0])
record = build_sme_mask(
    snakemake.wildcards.platform,
    read_json(snakemake.input.ndk[0]) if snakemake.input.ndk else None,
    snakemake.params.build_dir,
    snakemake.output.mask,
    log,
)
write_json(snakemake.output.record, record)
