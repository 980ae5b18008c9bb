"""The job of rule fetch_ort_genai (workflow/rules/engines.smk)."""

from mnnrepro.engines.ort_genai.fetch import fetch_ort_genai
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to


def run(job: Job) -> None:
    log = log_to(job.log[0])
    record = fetch_ort_genai(
        job.params.platform,
        job.params.pins,
        job.params.cache,
        job.output.site,
    )
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
