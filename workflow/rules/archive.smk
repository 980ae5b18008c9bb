# Archive: everything needed to read and re-derive the results, deterministically packed
# (replay.smk re-derives a run's results from such an archive).


rule archive_results:
    input:
        final=get_final_output,
        runs=get_run_indexes,
        validity=get_validity_files,
        greedy=get_greedy_files,
        facts=expand("results/{{experiment}}/devices/{device}.json", device=DEVICES),
        engines=get_engine_files,
        manifests=get_model_manifests,
        layouts=get_model_layouts,
        bandwidth=get_bandwidth_files,
        sweep=get_sweep_indexes,
        profiles=get_profile_indexes,
    output:
        archive="results/{experiment}/{experiment}-archive.tar.gz",
    log:
        "logs/archive_results/{experiment}.log",
    benchmark:
        "logs/archive_results/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        config=config,
    message:
        "Packing results/{wildcards.experiment}/{wildcards.experiment}-archive.tar.gz"
    script:
        "../scripts/archive_results.py"


rule archive:
    input:
        expand("results/{experiment}/{experiment}-archive.tar.gz", experiment=EXPERIMENT),
    localrule: True
