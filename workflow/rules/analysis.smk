# Analysis: validity checks, the tidy table, statistics and verdicts.


rule check_validity:
    input:
        greedy="results/{experiment}/greedy/{device}/{model}.json",
        facts="results/{experiment}/devices/{device}.json",
        engines=get_engine_files,
    output:
        validity="results/{experiment}/validity/{device}/{model}.json",
    log:
        "logs/check_validity/{experiment}/{device}/{model}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        comparison=config["comparison"],
        correctness=config["correctness"],
        variants=get_variant_specs,
        code=ANALYSIS_CODE,
    message:
        "Validity checks for device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/check_validity.py"


rule collect_bench_table:
    input:
        runs=get_run_indexes,
    output:
        table=report(
            "results/{experiment}/bench.csv",
            caption="../report/bench.rst",
            category="Raw runs",
        ),
    log:
        "logs/collect_bench_table/{experiment}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        code=ANALYSIS_CODE,
    message:
        "Collecting every repetition into bench.csv"
    script:
        "../scripts/collect_bench_table.py"


rule compute_summary:
    input:
        table="results/{experiment}/bench.csv",
        validity=get_validity_files,
        facts=expand("results/{{experiment}}/devices/{device}.json", device=DEVICES),
        engines=get_engine_files,
    output:
        table=report(
            "results/{experiment}/summary.csv",
            caption="../report/summary.rst",
            category="Speedups",
        ),
        document="results/{experiment}/summary.json",
    log:
        "logs/compute_summary/{experiment}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        config=config,
        code=ANALYSIS_CODE,
    message:
        "Speedups with paired bootstrap CIs and claim verdicts"
    script:
        "../scripts/compute_summary.py"
