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
    conda:
        "../../envs/analysis.yaml"
    params:
        code=ANALYSIS_CODE,
    message:
        "Plotting throughput per repetition"
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
    conda:
        "../../envs/analysis.yaml"
    params:
        code=ANALYSIS_CODE,
    message:
        "Plotting speedups against the claim band"
    script:
        "../scripts/plot_speedup.py"


rule plot_temperature:
    input:
        table="results/{experiment}/bench.csv",
    output:
        html=report(
            "results/{experiment}/plots/temperature.html",
            caption="../report/temperature.rst",
            category="Devices",
            labels={"chart": "temperature over the run"},
        ),
        png="results/{experiment}/plots/temperature.png",
    log:
        "logs/plot_temperature/{experiment}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        code=ANALYSIS_CODE,
    message:
        "Plotting device temperature over the run"
    script:
        "../scripts/plot_temperature.py"
