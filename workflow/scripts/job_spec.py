"""The one place that reads Snakemake's object: a rule's shim hands it here, and its job goes
to the package as a spec, a plain value written beside the job's log (mnnrepro/job.py), from
which `python -m mnnrepro.job <spec>` reruns the job."""

from pathlib import Path

from mnnrepro.job import LISTS, start


def run_job(snakemake, script: str) -> None:
    """Runs the job of the rule whose shim is workflow/scripts/<script>.py: input, output,
    log, params and wildcards as Snakemake's named lists are, their items and their names."""
    lists = {
        name: {"items": list(named), "names": {n: list(s) for n, s in named._names.items()}}
        for name, named in ((name, getattr(snakemake, name)) for name in LISTS)
    }
    start(
        {
            **lists,
            "script": script,
            "rule": snakemake.rule,
            "threads": snakemake.threads,
            "repository": str(Path(snakemake.scriptdir).parents[1]),
        }
    )
