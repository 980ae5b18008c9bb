from mnnrepro.archive.replay import restore
from mnnrepro.logs import log_to

log = log_to(snakemake.log[0])
restored = restore(
    snakemake.input.archive,
    snakemake.params.results,
    snakemake.params.experiment,
    snakemake.params.engine_records,
    snakemake.params.models_dir,
)
print("\n".join(f"restored {path}" for path in restored), file=log)
