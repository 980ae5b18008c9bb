"""The job of rules run_bench and run_sweep (workflow/rules/bench.smk)."""

from mnnrepro.design import Design
from mnnrepro.engines.pairs import modes_at
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.runs.benchmark import run_plan_for_rule
from mnnrepro.runs.job import DeviceJob


def run(job: Job) -> None:
    log_to(job.log[0])
    index = run_plan_for_rule(
        DeviceJob.of(job),  # a vision model's main benchmark asks its images; a sweep none
        raw_dir=job.params.raw_dir,
        design=Design.of(job.params.design),
        modes=modes_at(job.input.modes),
        remeasure=job.params.remeasure,
    )
    index.update(experiment=job.wildcards.experiment, model=job.wildcards.model)
    if job.params.point:  # a sweep point (rule run_sweep)
        index.update(point=job.params.point, bench=job.params.bench)
    write_json(job.output.runs, index)
