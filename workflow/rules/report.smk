# Report: the Markdown summary (snakemake --report builds the HTML report from report() items).


rule write_summary_report:
    input:
        table="results/{experiment}/summary.csv",
        document="results/{experiment}/summary.json",
        facts=get_device_facts,
        engines=get_engine_files,
        manifests=get_model_manifests,
        emulation=get_emulation_tables,
        mechanism=get_mechanism_report,
        sweep=get_sweep_report,
        kernels=get_kernel_table,
        replay=[f"results/{RESULTS_KEY}/replay.json"] if REPLAY else [],  # what it checked
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
        top=config["attribution"]["top"],
        code=ANALYSIS_CODE,
    message:
        "Writing results/{wildcards.experiment}/summary.md"
    script:
        "../scripts/write_summary_report.py"
