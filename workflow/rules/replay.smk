# Replay (`--config replay=<archive.tar.gz>`): the archive's records (run indexes and raw
# invocations, greedy answers, validity checks, kernel profiles, device facts, engine records, model
# manifests) are restored under results/replay/<archive>/, checked against its
# MANIFEST.sha256; the ordinary analysis rules then derive everything else from them, as in a
# live run. No device, toolchain, model or network is needed.


rule restore_archive:
    input:
        archive=PLAN.experiment.replay,
    output:
        **PLAN.archived_records(),
        raw=directory(f"results/{PLAN.experiment.results_key}/raw"),
        sweep_raw=(
            [directory(f"results/{PLAN.experiment.results_key}/sweep/raw")] if PLAN.sweep else []
        ),
    log:
        f"logs/restore_archive/{PLAN.experiment.results_key}.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        experiment=PLAN.experiment.name,
        engine_records={e: PLAN.engine_record(e) for e in PLAN.used_engines},
        models_dir=PLAN.experiment.models_dir,
        results=f"results/{PLAN.experiment.results_key}",
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
        archive=PLAN.experiment.replay,
        tables=PLAN.results("{table}", table=PLAN.replay_tables()),
    output:
        check=f"results/{PLAN.experiment.results_key}/replay.json",
    log:
        f"logs/check_replay/{PLAN.experiment.results_key}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        experiment=PLAN.experiment.name,
        tables=PLAN.replay_tables(),
        code=PLAN.code_of("check_replay.py"),
    message:
        "Comparing the replayed tables with the archive's own ({params.tables})"
    script:
        "../scripts/check_replay.py"
