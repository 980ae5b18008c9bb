"""The job of rule check_validity (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.attribution import read_profiles
from mnnrepro.analysis.validity import check
from mnnrepro.design import Design, variants_of
from mnnrepro.engines.pairs import modes_at
from mnnrepro.engines.records import engine_records
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.records import read_record
from mnnrepro.sections import Attribution, Correctness


def run(job: Job) -> None:
    log_to(job.log[0])
    result = check(
        read_record(job.input.greedy, "greedy"),
        read_record(job.input.facts, "device_facts"),
        job.wildcards.model,
        Design.of(job.params.design),
        modes_at(job.input.modes),
        Correctness.of(job.params.correctness),
        engine_records(job.input.engines),
        variants_of(job.params.variants),
        read_profiles(job.input.profiles) if job.input.profiles else None,
        Attribution.of(job.params.attribution),
        {r["engine"]: r for r in map(read_json, job.input.engine_tests)},
    )
    write_json(job.output.validity, result)
