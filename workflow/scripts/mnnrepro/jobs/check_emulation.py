"""The job of rule check_emulation (workflow/rules/analysis.smk)."""

from pathlib import Path

from mnnrepro.analysis.divergence import GateRule
from mnnrepro.analysis.emulation import agreement_table
from mnnrepro.files import read_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.sections import Correctness


def run(job: Job) -> None:
    log_to(job.log[0])
    devices = [Path(p).parent.name for p in job.input.greedy]
    greedy = dict(zip(devices, map(read_json, job.input.greedy), strict=True))
    facts = {f["device"]: f for f in map(read_json, job.input.facts)}
    table = agreement_table(
        greedy,
        facts,
        job.params.reference,
        job.wildcards.model,
        GateRule.of(Correctness.of(job.params.correctness)),
    )
    table.to_csv(job.output.table, index=False)
