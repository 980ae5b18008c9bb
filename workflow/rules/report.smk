# Report: the Markdown summary (snakemake --report builds the HTML report from report() items).


rule write_summary_report:
    input:
        table="results/{experiment}/summary.csv",
        document="results/{experiment}/summary.json",
        facts=PLAN.device_facts,
        engines=PLAN.engine_files,
        manifests=PLAN.model_manifests,
        emulation=PLAN.emulation_tables,
        mechanism=PLAN.mechanism_report,
        sweep=PLAN.sweep_report,
        kernels=PLAN.kernel_table,
        prediction=PLAN.prediction_files,
        engine_tests=PLAN.engine_tests_table,
        replay=PLAN.replay_check,  # what it checked
    output:
        markdown=report(
            "results/{experiment}/summary.md",
            caption="../report/summary_md.rst",
            category="Speedups",
        ),
    log:
        "logs/write_summary_report/{experiment}.log",
    benchmark:
        "logs/write_summary_report/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        top=PLAN.settings.attribution["top"],
        design=PLAN.design_spec,  # which engine each variant runs: which speeds compare
        code=PLAN.code_of("write_summary_report.py"),
    message:
        "Writing results/{wildcards.experiment}/summary.md"
    script:
        "../scripts/write_summary_report.py"
