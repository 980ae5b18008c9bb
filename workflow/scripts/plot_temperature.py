import pandas as pd

from mnnrepro.logs import log_to
from mnnrepro.plots import save, temperature_chart

log_to(snakemake.log[0])
save(
    temperature_chart(pd.read_csv(snakemake.input.table)),
    snakemake.output.html,
    snakemake.output.png,
)
