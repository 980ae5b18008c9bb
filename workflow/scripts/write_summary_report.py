from mnnrepro.analysis.jobs import write_report
from mnnrepro.archive.replay_check import replay_section
from mnnrepro.files import read_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
replay = snakemake.input.replay
write_report(snakemake, replay_section(read_json(replay[0])) if replay else [])
