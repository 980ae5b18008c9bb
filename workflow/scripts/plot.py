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

log_to(snakemake.log[0])
draw = {
    "runs": runs_chart,
    "speedup": speedup_chart,
    "temperature": temperature_chart,
    "sweep": sweep_chart,
    "kernels": kernels_chart,
}
for chart in snakemake.params.charts:
    table = read_chained_table(
        snakemake.input[f"{chart}_table"], snakemake.input[f"{chart}_document"]
    )
    save(draw[chart](table), snakemake.output[f"{chart}_html"], snakemake.output[f"{chart}_png"])
