"""The job of rule check_replay (workflow/rules/replay.smk)."""

from mnnrepro.archive.provenance import git_state
from mnnrepro.archive.replay_check import check_replay
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    check = check_replay(
        job.input.archive,
        job.params.experiment,
        dict(zip(job.params.tables, job.input.tables, strict=True)),
        git_state(job.repository),
    )
    write_json(job.output.check, check)
