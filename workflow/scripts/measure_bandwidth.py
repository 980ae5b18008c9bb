from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.bandwidth import bandwidth_job

log_to(snakemake.log[0])
result = bandwidth_job(snakemake)
write_json(snakemake.output.bandwidth, {"experiment": snakemake.wildcards.experiment, **result})
