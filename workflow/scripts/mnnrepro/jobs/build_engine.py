"""The job of rule build_engine (workflow/rules/build.smk)."""

from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.files import read_json, write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.toolchain.records import BuildJob


def run(job: Job) -> None:
    log = log_to(job.log[0])
    source = read_json(job.input.source)
    ndk = read_json(job.input.ndk[0]) if job.input.ndk else None
    kind = kind_of_spec(job.params.spec)
    info = kind.build(
        BuildJob(
            engine=job.params.name,
            source=source,
            spec=job.params.spec[kind.config_key],
            build_dir=job.params.build_dir,
            engine_dir=job.output.bin,
            log_file=log,
            ndk=ndk,
            jobs=job.threads,
        )
    )
    info["key"] = job.wildcards.engine  # results/engines/<key>: name + definition digest
    write_json(job.output.build, info)
