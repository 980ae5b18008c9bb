"""The job of rule fetch_engine_archives (workflow/rules/engines.smk)."""

from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    kind = kind_of_spec(job.params.spec)
    record = kind.fetch(job.params.platform, job.params.pins, job.params.cache, job.output.site)
    write_json(
        job.output.record,
        {
            **record,
            "engine": job.params.name,
            "runner": job.params.runner,
            # an Android engine's tools are built with the NDK (toolchain/tools.build_tool)
            **({"ndk": read_json(job.input.ndk[0])} if job.input.ndk else {}),
        },
    )
    print(f"fetched {record['pin']}", file=log)
