"""The job of rule write_summary_report (workflow/rules/report.smk)."""

from mnnrepro.analysis.jobs import write_report
from mnnrepro.archive.replay_check import replay_section
from mnnrepro.files import read_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log_to(job.log[0])
    replay = job.input.replay
    write_report(job, replay_section(read_json(replay[0])) if replay else [])
