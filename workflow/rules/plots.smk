# Plots: altair charts as self-contained HTML and PNG (vl-convert, no browser), every chart of
# an experiment in one job: vl-convert bundles vega's JavaScript into the first page a process
# saves (3-10 s on 2 cores), and the charts share it.

# chart -> the table it is drawn from, the summary holding that table's sha256, its report
# category, its report label (captions: workflow/report/plot-<chart>.rst)
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
        # each chart's table, and the document holding its sha256 (an edited table is refused)
        **{f"{chart}_table": f"results/{{experiment}}/{PLOTS[chart][0]}" for chart in PLAN.charts},
        **{
            f"{chart}_document": f"results/{{experiment}}/{PLOTS[chart][1]}"
            for chart in PLAN.charts
        },
    output:
        **{
            f"{chart}_html": report(
                f"results/{{experiment}}/plots/{chart}.html",
                caption=f"../report/plot-{chart}.rst",
                category=PLOTS[chart][2],
                labels={"chart": PLOTS[chart][3]},
            )
            for chart in PLAN.charts
        },
        **{f"{chart}_png": f"results/{{experiment}}/plots/{chart}.png" for chart in PLAN.charts},
    log:
        "logs/plot/{experiment}.log",
    benchmark:
        "logs/plot/{experiment}.benchmark.tsv"
    conda:
        "../../envs/analysis.yaml"
    params:
        charts=PLAN.charts,
        code=PLAN.code_of("plot.py"),
    message:
        "Plotting {params.charts} (results/{wildcards.experiment}/plots/)"
    script:
        "../scripts/plot.py"
