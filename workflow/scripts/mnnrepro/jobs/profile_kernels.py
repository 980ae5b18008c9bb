"""The job of rule profile_kernels (workflow/rules/bench.smk)."""

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.runs.job import DeviceJob
from mnnrepro.runs.profile import profile_for_rule


def run(job: Job) -> None:
    log_to(job.log[0])
    index = profile_for_rule(
        DeviceJob.of(job),
        attribution=job.params.attribution,
        out_dir=job.params.out_dir,
    )
    index.update(experiment=job.wildcards.experiment, model=job.wildcards.model)
    write_json(job.output.index, index)
