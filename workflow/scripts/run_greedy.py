from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.gate_job import GateJob

log_to(snakemake.log[0])
write_json(snakemake.output.greedy, GateJob.of(snakemake).answers())
