# Engines run as they are published: MNN's wheel (checked in the environment) and ONNX
# Runtime GenAI's wheels (pinned, fetched, unpacked), pinned and hashed.


rule describe_engine:
    output:
        engine="results/engines/{engine}/engine.json",
    log:
        "logs/describe_engine/{engine}.log",
    benchmark:
        "logs/describe_engine/{engine}.benchmark.tsv"
    conda:
        "../../envs/bench.yaml"
    params:
        name=PLAN.engine_name,
        spec=PLAN.engine_spec,
    message:
        "Checking and hashing MNN engine {wildcards.engine}"
    script:
        "../scripts/describe_engine.py"


# An engine made of pinned archives (a kind with `fetches_archives`: ONNX Runtime GenAI's
# wheels or AARs, ExecuTorch's wheels): its platform's pins downloaded by sha256, verified and
# unpacked by its kind (EngineKind.fetch): the files a device runs (staged by hash).
rule fetch_engine_archives:
    input:
        ndk=PLAN.ndk_receipt,  # Android: the NDK its gate tool and probe are built with
    output:
        record="results/engines/{engine}/wheels.json",
        site=directory("results/engines/{engine}/bin"),
    log:
        "logs/fetch_engine_archives/{engine}.log",
    wildcard_constraints:
        engine=PLAN.keys_of(PLAN.fetched_engines),
    localrule: True  # the network is where Snakemake runs, not a compute node
    conda:
        "../../envs/analysis.yaml"
    params:
        name=PLAN.engine_name,
        spec=PLAN.engine_spec,
        platform=PLAN.engine_platform,
        runner=PLAN.fetched_runner,
        pins=PLAN.archive_pins,
        said=PLAN.messages.archive_pins,
        cache="resources/wheels",
    message:
        "Fetching {params.said} for engine {wildcards.engine}"
    script:
        "../scripts/fetch_engine_archives.py"
