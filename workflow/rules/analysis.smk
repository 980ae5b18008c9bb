# Analysis: validity checks, the tidy table, statistics and verdicts.

# The slices of the config the statistics depend on (an edit elsewhere reruns nothing).
STATISTICS_PARAMS = dict(
    experiment=EXPERIMENT,
    raw_roots=RAW_ROOTS,
    max_other_load=config["bench"]["max_other_load"],
    comparison=canonical(config["comparison"]),
    stats=canonical(config["stats"]),
    bench=canonical(config["bench"]),
    code=ANALYSIS_CODE,
)


rule check_validity:
    input:
        greedy="results/{experiment}/greedy/{device}/{model}.json",
        facts="results/{experiment}/devices/{device}.json",
        engines=get_engine_files,
        profiles=get_profile_index,
    output:
        validity="results/{experiment}/validity/{device}/{model}.json",
    log:
        "logs/check_validity/{experiment}/{device}/{model}.log",
    benchmark:
        "logs/check_validity/{experiment}/{device}/{model}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        comparison=canonical(config["comparison"]),
        correctness=canonical(config["correctness"]),
        variants=get_variant_specs,
        attribution=canonical(config["attribution"]),
        code=ANALYSIS_CODE,
    message:
        "Validity checks for device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/check_validity.py"


# What ran (`attribution`): every profile's functions by library in one table.
rule collect_kernel_table:
    input:
        profiles=get_profile_indexes,
    output:
        table=report(
            "results/{experiment}/kernels.csv",
            caption="../report/kernels.rst",
            category="Explaining the gain",
        ),
    log:
        "logs/collect_kernel_table/{experiment}.log",
    benchmark:
        "logs/collect_kernel_table/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        code=ANALYSIS_CODE,
    message:
        "Collecting the profiled invocations into kernels.csv"
    script:
        "../scripts/collect_kernel_table.py"


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
    benchmark:
        "logs/collect_bench_table/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        raw_roots=RAW_ROOTS,
        max_other_load=config["bench"]["max_other_load"],
        code=ANALYSIS_CODE,
    message:
        "Collecting every repetition into bench.csv"
    script:
        "../scripts/collect_bench_table.py"


rule compute_summary:
    input:
        table="results/{experiment}/bench.csv",
        runs=get_run_indexes,
        validity=get_validity_files,
        facts=get_device_facts,
        engines=get_engine_files,
        kernels=get_kernel_table,  # chained in summary.json for its plot
    output:
        table=report(
            "results/{experiment}/summary.csv",
            caption="../report/summary.rst",
            category="Speedups",
        ),
        document="results/{experiment}/summary.json",
    log:
        "logs/compute_summary/{experiment}.log",
    benchmark:
        "logs/compute_summary/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        **STATISTICS_PARAMS,
        variants=canonical(config["variants"]),
        interval=MESSAGES.interval,
    message:
        "Speedups (CI: {params.interval}) and claim verdicts"
    script:
        "../scripts/compute_summary.py"


# `bench.sweep`: every point's runs in one table, and the gain at every point.
rule collect_sweep_table:
    input:
        runs=get_sweep_indexes,
    output:
        table="results/{experiment}/sweep/bench.csv",
    log:
        "logs/collect_sweep_table/{experiment}.log",
    benchmark:
        "logs/collect_sweep_table/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        raw_roots=RAW_ROOTS,
        max_other_load=config["bench"]["max_other_load"],
        code=ANALYSIS_CODE,
    message:
        "Collecting the sweep's repetitions into sweep/bench.csv"
    script:
        "../scripts/collect_sweep_table.py"


rule compute_sweep_summary:
    input:
        table="results/{experiment}/sweep/bench.csv",
        runs=get_sweep_indexes,
        main="results/{experiment}/bench.csv",
        document="results/{experiment}/summary.json",
    output:
        table=report(
            "results/{experiment}/sweep/summary.csv",
            caption="../report/sweep.rst",
            category="Explaining the gain",
        ),
        document="results/{experiment}/sweep/summary.json",
    log:
        "logs/compute_sweep_summary/{experiment}.log",
    benchmark:
        "logs/compute_sweep_summary/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        **STATISTICS_PARAMS,
    message:
        "Gains at every sweep point (sweep/summary.csv)"
    script:
        "../scripts/compute_sweep_summary.py"


# Explaining the gain: decode ceiling, prefill arithmetic, energy per token, mechanism checks.
rule explain_gain:
    input:
        bench="results/{experiment}/bench.csv",
        summary="results/{experiment}/summary.csv",
        document="results/{experiment}/summary.json",
        bandwidth=get_bandwidth_files,
        layouts=get_model_layouts,
    output:
        table=report(
            "results/{experiment}/mechanism.csv",
            caption="../report/mechanism.rst",
            category="Explaining the gain",
        ),
        document="results/{experiment}/mechanism.json",
    log:
        "logs/explain_gain/{experiment}.log",
    benchmark:
        "logs/explain_gain/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        experiment=EXPERIMENT,
        comparison=canonical(config["comparison"]),
        stats=canonical(config["stats"]),
        bench=canonical({"repetitions": config["bench"]["repetitions"]}),
        engine_formats=ENGINE_FORMATS,
        code=ANALYSIS_CODE,
    message:
        "Decode ceiling, prefill arithmetic and energy per token (mechanism.csv)"
    script:
        "../scripts/explain_gain.py"


# `snakemake analysis_all`: tables, statistics, verdicts and the summary (no plots).
rule analysis_all:
    input:
        expand(
            "results/{experiment}/{table}",
            experiment=RESULTS_KEY,
            table=["bench.csv", "summary.csv", "summary.json", "summary.md"],
        ),
    localrule: True


# The emulated devices' check: every device's greedy answers against the reference device.
rule check_emulation:
    input:
        greedy=expand("results/{{experiment}}/greedy/{device}/{{model}}.json", device=DEVICES),
        facts=get_device_facts,
    output:
        table=report(
            "results/{experiment}/emulation/{model}.csv",
            caption="../report/emulation.rst",
            category="Validity",
            labels={"model": "{model}", "table": "emulated SME2 checks"},
        ),
    log:
        "logs/check_emulation/{experiment}/{model}.log",
    benchmark:
        "logs/check_emulation/{experiment}/{model}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        reference=config.get("emulation", {}).get("reference", ""),
        correctness=config["correctness"],
        code=ANALYSIS_CODE,
    message:
        "Comparing greedy tokens of every device with {params.reference}"
    script:
        "../scripts/check_emulation.py"
