# Analysis: validity checks, the tidy table, statistics and verdicts.

# The slices of the config a table of runs depends on, and the statistics (an edit elsewhere
# reruns nothing).
TABLE_PARAMS = dict(
    raw_roots=PLAN.experiment.raw_roots, max_other_load=PLAN.design.bench.max_other_load
)
STATISTICS_PARAMS = dict(**TABLE_PARAMS, design=PLAN.design_spec)


# How each compared pair is judged on the device (claim, fallback check or equality),
# decided once from its facts and the engines' records, before the gate runs anything there
# (a replay derives them again from the archived facts and engine records).
rule decide_pair_modes:
    input:
        facts="results/{experiment}/devices/{device}.json",
        engines=PLAN.engine_files,
    output:
        modes="results/{experiment}/modes/{device}.json",
    log:
        "logs/decide_pair_modes/{experiment}/{device}.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        design=PLAN.design_spec,
    message:
        "How each compared pair is judged on device {wildcards.device}"
    script:
        "../scripts/decide_pair_modes.py"


rule check_validity:
    input:
        greedy="results/{experiment}/greedy/{device}/{model}.json",
        facts="results/{experiment}/devices/{device}.json",
        modes="results/{experiment}/modes/{device}.json",
        engines=PLAN.engine_files,
        profiles=PLAN.profile_index,
        engine_tests=PLAN.device_engine_tests,
    output:
        validity="results/{experiment}/validity/{device}/{model}.json",
    log:
        "logs/check_validity/{experiment}/{device}/{model}.log",
    benchmark:
        "logs/check_validity/{experiment}/{device}/{model}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        design=PLAN.design_spec,
        correctness=PLAN.settings.correctness,
        variants=PLAN.variant_specs,  # their env: what switches SME2 off in the same binary
        attribution=PLAN.settings.attribution,
        code=PLAN.code_of("check_validity.py"),
    message:
        "Validity checks for device {wildcards.device}, model {wildcards.model}"
    script:
        "../scripts/check_validity.py"


# What ran (`attribution`): every profile's functions by library in one table.
rule collect_kernel_table:
    input:
        profiles=PLAN.profile_indexes,
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
        code=PLAN.code_of("collect_kernel_table.py"),
    message:
        "Collecting the profiled invocations into kernels.csv"
    script:
        "../scripts/collect_kernel_table.py"


# The engines' own tests (`engine_tests`): every device's and engine's outcomes in one table.
rule collect_engine_tests:
    input:
        tests=PLAN.engine_test_files,
    output:
        table="results/{experiment}/engine_tests.csv",
    log:
        "logs/collect_engine_tests/{experiment}.log",
    benchmark:
        "logs/collect_engine_tests/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        code=PLAN.code_of("collect_engine_tests.py"),
    message:
        "Collecting the engines' own tests into engine_tests.csv"
    script:
        "../scripts/collect_engine_tests.py"


rule collect_bench_table:
    input:
        runs=PLAN.run_indexes,
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
        **TABLE_PARAMS,
        code=PLAN.code_of("collect_bench_table.py"),
    message:
        "Collecting every repetition into bench.csv"
    script:
        "../scripts/collect_bench_table.py"


rule compute_summary:
    input:
        table="results/{experiment}/bench.csv",
        runs=PLAN.run_indexes,
        validity=PLAN.validity_files,
        modes=PLAN.pair_mode_files,  # how each pair is judged on each device
        kernels=PLAN.kernel_table,  # chained in summary.json for its plot
        prediction=PLAN.prediction_files,  # scores the pairs judged against their claims
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
        code=PLAN.code_of("compute_summary.py"),
        interval=PLAN.messages.interval,
    message:
        "Speedups (CI: {params.interval}) and claim verdicts"
    script:
        "../scripts/compute_summary.py"


# `bench.sweep`: every point's runs in one table, and the gain at every point.
rule collect_sweep_table:
    input:
        runs=PLAN.sweep_indexes,
    output:
        table="results/{experiment}/sweep/bench.csv",
    log:
        "logs/collect_sweep_table/{experiment}.log",
    benchmark:
        "logs/collect_sweep_table/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        **TABLE_PARAMS,
        code=PLAN.code_of("collect_sweep_table.py"),
    message:
        "Collecting the sweep's repetitions into sweep/bench.csv"
    script:
        "../scripts/collect_sweep_table.py"


rule compute_sweep_summary:
    input:
        table="results/{experiment}/sweep/bench.csv",
        runs=PLAN.sweep_indexes,
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
        code=PLAN.code_of("compute_sweep_summary.py"),
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
        bandwidth=PLAN.bandwidth_files,
        layouts=PLAN.model_layouts,
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
        design=PLAN.design_spec,
        engine_formats=PLAN.engine_formats,
        code=PLAN.code_of("explain_gain.py"),
    message:
        "Decode ceiling, prefill arithmetic and energy per token (mechanism.csv)"
    script:
        "../scripts/explain_gain.py"


# `snakemake analysis_all`: tables, statistics, verdicts and the summary (no plots).
rule analysis_all:
    input:
        PLAN.summary_tables,
    localrule: True


# The emulated devices' check: every device's greedy answers against the reference device.
rule check_emulation:
    input:
        greedy=expand("results/{{experiment}}/greedy/{device}/{{model}}.json", device=PLAN.devices),
        facts=PLAN.device_facts,
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
        reference=PLAN.settings.emulation_reference,
        correctness=PLAN.settings.correctness,
        code=PLAN.code_of("check_emulation.py"),
    message:
        "Comparing greedy tokens of every device with {params.reference}"
    script:
        "../scripts/check_emulation.py"


# The phone's gain predicted before the phone (`prediction`): the emulated device's
# instruction mix priced by the cost model's cited constants.
# llvm-mca for a prediction priced instruction by instruction (`prediction.pricing`): the
# cost model's pinned Debian packages, unpacked under resources/llvm-mca.
rule fetch_llvm_mca:
    output:
        receipt="resources/llvm-mca/receipt.json",
    log:
        "logs/fetch_llvm_mca.log",
    localrule: True  # the network is where Snakemake runs, not a compute node
    conda:
        "../../envs/analysis.yaml"
    params:
        pins=PLAN.settings.llvm_mca_pins,
    message:
        "Fetching llvm-mca (Debian unstable's LLVM, pinned, verified)"
    script:
        "../scripts/fetch_llvm_mca.py"


rule predict_gain:
    input:
        # made here: kernels.csv, the cost model, the emulated models' manifests; or a
        # prediction made earlier (`prediction.registered`)
        unpack(PLAN.prediction_inputs),
    output:
        document="results/{experiment}/prediction.json",
        markdown=report(
            "results/{experiment}/prediction.md",
            caption="../report/prediction.rst",
            category="Explaining the gain",
        ),
    log:
        "logs/predict_gain/{experiment}.log",
    benchmark:
        "logs/predict_gain/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        prediction=PLAN.settings.prediction,
        design=PLAN.design_spec,
        variants=PLAN.variant_specs,  # what a registered prediction's variants differ in
        waiting=PLAN.waiting_functions,  # what the prediction leaves out of the work
        code=PLAN.code_of("predict_gain.py"),
    message:
        "The phone's gains predicted from the instruction mix (prediction.md)"
    script:
        "../scripts/predict_gain.py"
