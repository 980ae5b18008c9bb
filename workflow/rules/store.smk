# Results across runs (docs/store.md): this experiment's archive and `store.archives` in a
# new results store, compared, with a dashboard page; `snakemake store` builds it again.


rule build_results_store:
    input:
        archives=PLAN.store_archives,
    output:
        store="results/{experiment}/store/runs.sqlite",
        compare="results/{experiment}/store/compare.md",
        dashboard="results/{experiment}/store/dashboard.html",
    log:
        "logs/build_results_store/{experiment}.log",
    benchmark:
        "logs/build_results_store/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        code=PLAN.code_of("build_results_store.py"),
    message:
        "Registering {input.archives} into results/{wildcards.experiment}/store/runs.sqlite"
    script:
        "../scripts/build_results_store.py"


rule store:
    input:
        expand("results/{experiment}/store/runs.sqlite", experiment=PLAN.experiment.name),
    localrule: True
