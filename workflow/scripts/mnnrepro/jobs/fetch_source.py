"""The job of rule fetch_source (workflow/rules/build.smk)."""

from pathlib import Path

from mnnrepro.engines.registry import kind_of_tree
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    kind = kind_of_tree(job.wildcards.tree)
    receipt = kind.provide_source(job.params.tree, Path(job.output.receipt).parent)
    write_json(job.output.receipt, receipt)
