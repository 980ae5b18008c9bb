"""The job of rule build_gate_tool (workflow/rules/build.smk)."""

from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    engine = EngineRecord.of(read_json(job.input.record))
    record = engine.kind.build_gate_tool(
        engine,
        read_json(job.input.source[0]) if job.input.source else {},
        job.input.bin,
        job.params.build_dir,
        job.output.tool,
        log,
    )
    write_json(job.output.record, record)
