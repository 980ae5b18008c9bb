# Plots: altair charts as self-contained HTML and PNG (vl-convert, no browser).


rule plot_runs:
    input:
        table="results/{experiment}/bench.csv",
    output:
        html=report(
            "results/{experiment}/plots/runs.html",
            caption="../report/runs.rst",
            category="Raw runs",
            labels={"chart": "throughput per repetition"},
        ),
        png="results/{experiment}/plots/runs.png",
    log:
        "logs/plot_runs/{experiment}.log",
    message:
        "Plotting throughput per repetition"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/plot_runs.py"


rule plot_speedup:
    input:
        table="results/{experiment}/summary.csv",
    output:
        html=report(
            "results/{experiment}/plots/speedup.html",
            caption="../report/speedup.rst",
            category="Speedups",
            labels={"chart": "speedup with CI"},
        ),
        png="results/{experiment}/plots/speedup.png",
    log:
        "logs/plot_speedup/{experiment}.log",
    message:
        "Plotting speedups against the claim band"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/plot_speedup.py"
