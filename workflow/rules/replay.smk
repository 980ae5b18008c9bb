# Replay (`--config replay=<archive.tar.gz>`): the archive's records (run indexes and raw
# invocations, greedy answers, validity checks, kernel profiles, device facts, engine records, model
# manifests) are restored under results/replay/<archive>/, checked against its
# MANIFEST.sha256; the ordinary analysis rules then derive everything else from them, as in a
# live run. No device, toolchain, model or network is needed.


rule restore_archive:
    input:
        archive=REPLAY,
    output:
        **ARCHIVED_RECORDS,
        raw=directory(f"results/{RESULTS_KEY}/raw"),
        sweep_raw=[directory(f"results/{RESULTS_KEY}/sweep/raw")] if SWEEP else [],
    log:
        f"logs/restore_archive/{RESULTS_KEY}.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        experiment=EXPERIMENT,
        engine_records={
            e: engine_record(e)
            for e in sorted({config["variants"][v]["engine"] for v in VARIANTS})
        },
        models_dir=MODELS_DIR,
        results=f"results/{RESULTS_KEY}",
    message:
        "Restoring the records of {input.archive} (checked against its MANIFEST.sha256)"
    script:
        "../scripts/restore_archive.py"


# The restored checks are the archived ones: they are not derived again.
ruleorder: restore_archive > check_validity


# The replay checked against the archive's own tables: what differs, with its reason
# (archive/replay_check.py); summary.md says it first.
rule check_replay:
    input:
        archive=REPLAY,
        tables=expand("results/{experiment}/{table}", experiment=RESULTS_KEY, table=REPLAY_TABLES),
    output:
        check=f"results/{RESULTS_KEY}/replay.json",
    log:
        f"logs/check_replay/{RESULTS_KEY}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        experiment=EXPERIMENT,
        tables=REPLAY_TABLES,
        code=ANALYSIS_CODE,
    message:
        "Comparing the replayed tables with the archive's own ({params.tables})"
    script:
        "../scripts/check_replay.py"
