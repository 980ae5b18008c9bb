# Archive: everything needed to read and re-derive the results, deterministically packed
# (replay.smk re-derives a run's results from such an archive).


rule archive_results:
    input:
        **PLAN.archived_records(),
        final=PLAN.final_output,
    output:
        archive="results/{experiment}/{experiment}-archive.tar.gz",
    log:
        "logs/archive_results/{experiment}.log",
    benchmark:
        "logs/archive_results/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        config=PLAN.config,
    message:
        "Packing results/{wildcards.experiment}/{wildcards.experiment}-archive.tar.gz"
    script:
        "../scripts/archive_results.py"


rule archive:
    input:
        expand("results/{experiment}/{experiment}-archive.tar.gz", experiment=PLAN.experiment.name),
    localrule: True
