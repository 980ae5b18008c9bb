"""The job of rule decide_pair_modes (workflow/rules/analysis.smk)."""

from mnnrepro.design import Design
from mnnrepro.engines.pairs import modes_record
from mnnrepro.engines.records import engine_records
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.records import read_record


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = modes_record(
        Design.of(job.params.design),
        engine_records(job.input.engines),
        read_record(job.input.facts, "device_facts"),
    )
    for mode in record["modes"]:
        print(
            f"{mode['pair']}: {mode['treatment']} vs {mode['baseline']}: {mode['mode']}", file=log
        )
    write_json(job.output.modes, record)
