"""The job of rule collect_device_facts (workflow/rules/devices.smk)."""

from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.runs.on_device import on_device, surviving


def run(job: Job) -> None:
    log_to(job.log[0])
    stage = "collecting its facts"  # a phone not ready is refused here, before any engine build
    with on_device(job.wildcards.device, job.params.spec, stage) as device:
        write_json(job.output.facts, surviving(device, stage, device.facts))
