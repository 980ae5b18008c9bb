# Archive: everything needed to read and re-derive the results, deterministically packed;
# replay: re-derive tables, statistics, verdicts, plots and summary from such an archive.


rule archive_results:
    input:
        final=get_final_output,
        runs=get_run_indexes,
        validity=get_validity_files,
        greedy=get_greedy_files,
        facts=expand("results/{{experiment}}/devices/{device}.json", device=DEVICES),
        engines=get_engine_files,
        manifests=expand("results/models/{model}/manifest.json", model=MODELS),
    output:
        archive="results/{experiment}/{experiment}-archive.tar.gz",
    log:
        "logs/archive_results/{experiment}.log",
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


rule replay_archive:
    input:
        archive=get_replay_archive,
    output:
        table="results/replay/{replay}/summary.csv",
        bench="results/replay/{replay}/bench.csv",
        document="results/replay/{replay}/summary.json",
        markdown="results/replay/{replay}/summary.md",
        charts=expand(
            "results/replay/{{replay}}/plots/{chart}.{ext}",
            chart=["runs", "speedup", "temperature"],
            ext=["html", "png"],
        ),
    log:
        "logs/replay_archive/{replay}.log",
    conda:
        "../../envs/analysis.yaml"
    message:
        "Re-deriving every table, verdict and plot from {input.archive}"
    script:
        "../scripts/replay_archive.py"
