"""The job of rule build_results_store (workflow/rules/store.smk)."""

from pathlib import Path

from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.store.compare import Selection, compare_runs, markdown
from mnnrepro.store.dashboard import write_dashboard
from mnnrepro.store.register import register_archive


def run(job: Job) -> None:
    log = log_to(job.log[0])
    Path(job.output.store).unlink(missing_ok=True)  # a new store, from the archives alone
    runs = []
    for archive in job.input.archives:
        run_id, added = register_archive(job.output.store, archive)
        print(f"{'registered' if added else 'already registered'} {run_id} ({archive})", file=log)
        runs.append(run_id)
    comparison = markdown(*compare_runs(job.output.store, Selection(runs=tuple(runs))))
    Path(job.output.compare).write_text(comparison + "\n")
    print(comparison)  # the comparison on the terminal too, as `python -m mnnrepro.store compare`
    write_dashboard(job.output.store, job.output.dashboard)
