from mnnrepro.analysis.plots import (
    kernels_chart,
    runs_chart,
    save,
    speedup_chart,
    sweep_chart,
    temperature_chart,
)
from mnnrepro.logs import log_to
from mnnrepro.records import read_chained_table

log = log_to(snakemake.log[0])
draw = {
    "runs": runs_chart,
    "speedup": speedup_chart,
    "temperature": temperature_chart,
    "sweep": sweep_chart,
    "kernels": kernels_chart,
}
for chart in snakemake.params.charts:
    path = snakemake.input[f"{chart}_table"]
    table = read_chained_table(path, snakemake.input[f"{chart}_document"])
    html, png = snakemake.output[f"{chart}_html"], snakemake.output[f"{chart}_png"]
    problem = save(draw[chart](table), html, png, path)
    if problem:
        print(f"warning: {chart} chart not drawn, a note in its place: {problem}", file=log)
