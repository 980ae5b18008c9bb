"""The job of rule fetch_llvm_mca (workflow/rules/analysis.smk)."""

from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.toolchain.llvm_mca import provide_llvm_mca


def run(job: Job) -> None:
    log_to(job.log[0])
    receipt = provide_llvm_mca(job.params.pins, Path(job.output.receipt).parent)
    write_json(job.output.receipt, receipt)
