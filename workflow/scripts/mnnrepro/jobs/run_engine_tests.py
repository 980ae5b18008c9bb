"""The job of rule run_engine_tests (workflow/rules/engine_tests.smk)."""

from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.records import read_record
from mnnrepro.runs.engine_tests import run_engine_tests, without_suite
from mnnrepro.runs.on_device import on_device
from mnnrepro.runs.staging import stage_engine
from mnnrepro.sections import EngineTests


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = EngineRecord.of(read_record(job.input.record, "engine"))
    suite, reason = record.kind.test_suite(record)
    if suite is None:  # nothing to run: the device is not asked
        result = without_suite(job.wildcards.device, record, reason)
    else:
        with on_device(job.wildcards.device, job.params.device, "its tests") as device:
            where = stage_engine(device, job.input.engine_dir[0])
            result = run_engine_tests(
                device, record, suite, where, EngineTests.of(job.params.engine_tests)
            )
    for test in result["tests"]:
        print(
            f"{test['test']}: {test['outcome']} ({test['seconds']} s) {test['command_line']}",
            file=log,
        )
    write_json(job.output.tests, {"experiment": job.wildcards.experiment, **result})
