from mnnrepro.archive.pack import archive_job
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
archive_job(snakemake)
