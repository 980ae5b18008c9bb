from pathlib import Path

from mnnrepro.archive.provenance import git_state
from mnnrepro.archive.replay_check import check_replay
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
check = check_replay(
    snakemake.input.archive,
    snakemake.params.experiment,
    dict(zip(snakemake.params.tables, snakemake.input.tables, strict=True)),
    git_state(str(Path(snakemake.scriptdir).parents[1])),
)
write_json(snakemake.output.check, check)
