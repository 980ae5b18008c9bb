"""The job of rule restore_archive (workflow/rules/replay.smk)."""

from mnnrepro.archive.replay import restore
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    restored = restore(
        job.input.archive,
        job.params.results,
        job.params.experiment,
        job.params.engine_records,
        job.params.models_dir,
    )
    print("\n".join(f"restored {path}" for path in restored), file=log)
