"""The job of rule build_bandwidth_probe (workflow/rules/build.smk)."""

from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.toolchain.tools import build_bandwidth_probe


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = build_bandwidth_probe(
        EngineRecord.of(read_json(job.input.engine)),
        job.params.build_dir,
        job.output.probe,
        log,
    )
    write_json(job.output.record, record)
