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
chart = {
    "runs": runs_chart,
    "speedup": speedup_chart,
    "temperature": temperature_chart,
    "sweep": sweep_chart,
    "kernels": kernels_chart,
}
table = read_chained_table(snakemake.input.table, snakemake.input.document)
save(chart[snakemake.wildcards.chart](table), snakemake.output.html, snakemake.output.png)
