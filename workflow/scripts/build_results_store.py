from pathlib import Path

from mnnrepro.logs import log_to
from mnnrepro.store.compare import Selection, compare_runs, markdown
from mnnrepro.store.dashboard import write_dashboard
from mnnrepro.store.register import register_archive

log = log_to(snakemake.log[0])
Path(snakemake.output.store).unlink(missing_ok=True)  # a new store, from the archives alone
runs = []
for archive in snakemake.input.archives:
    run_id, added = register_archive(snakemake.output.store, archive)
    print(f"{'registered' if added else 'already registered'} {run_id} ({archive})", file=log)
    runs.append(run_id)
comparison = markdown(*compare_runs(snakemake.output.store, Selection(runs=tuple(runs))))
Path(snakemake.output.compare).write_text(comparison + "\n")
print(comparison)  # the comparison on the terminal too, as `python -m mnnrepro.store compare`
write_dashboard(snakemake.output.store, snakemake.output.dashboard)
