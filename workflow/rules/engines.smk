# Engines: which MNN runs, pinned and hashed.


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
