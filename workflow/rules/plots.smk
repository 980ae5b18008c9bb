# Plots: altair charts as self-contained HTML and PNG (vl-convert, no browser).

# chart -> the table it is drawn from, the summary holding that table's sha256, its report
# category, its report label
PLOTS = {
    "runs": ("bench.csv", "summary.json", "Raw runs", "throughput per repetition"),
    "speedup": ("summary.csv", "summary.json", "Speedups", "speedup with CI"),
    "temperature": ("bench.csv", "summary.json", "Devices", "temperature over the run"),
    "sweep": (
        "sweep/summary.csv",
        "sweep/summary.json",
        "Explaining the gain",
        "gain vs prompt length and threads",
    ),
    "kernels": ("kernels.csv", "summary.json", "Explaining the gain", "where the time goes"),
}


rule plot:
    input:
        table=lambda wildcards: f"results/{wildcards.experiment}/{PLOTS[wildcards.chart][0]}",
        # holds the sha256 of both tables: a table edited after the summary is refused
        document=lambda wildcards: f"results/{wildcards.experiment}/{PLOTS[wildcards.chart][1]}",
    output:
        html=report(
            "results/{experiment}/plots/{chart}.html",
            caption="../report/plot.rst",
            category=lambda wildcards: PLOTS[wildcards.chart][2],
            labels=lambda wildcards: {"chart": PLOTS[wildcards.chart][3]},
        ),
        png="results/{experiment}/plots/{chart}.png",
    log:
        "logs/plot/{experiment}/{chart}.log",
    benchmark:
        "logs/plot/{experiment}/{chart}.benchmark.tsv"
    wildcard_constraints:
        chart="|".join(PLOTS),
    conda:
        "../../envs/analysis.yaml"
    params:
        code=ANALYSIS_CODE,
    message:
        "Plotting {wildcards.chart} ({output.html})"
    script:
        "../scripts/plot.py"
