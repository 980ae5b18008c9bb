import pandas as pd

from mnnrepro.analysis.plots import runs_chart, save, speedup_chart, temperature_chart
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
chart = {"runs": runs_chart, "speedup": speedup_chart, "temperature": temperature_chart}
table = pd.read_csv(snakemake.input.table)
save(chart[snakemake.wildcards.chart](table), snakemake.output.html, snakemake.output.png)
