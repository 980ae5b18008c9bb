from mnnrepro.analysis.jobs import write_prediction
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
write_prediction(snakemake)
