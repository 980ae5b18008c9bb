"""The job of rule build_sme_mask (workflow/rules/build.smk)."""

from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.toolchain.tools import build_sme_mask


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = build_sme_mask(
        job.wildcards.platform,
        read_json(job.input.ndk[0]) if job.input.ndk else None,
        job.params.build_dir,
        job.output.mask,
        log,
    )
    write_json(job.output.record, record)
