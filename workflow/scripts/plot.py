from mnnrepro.analysis.jobs import draw_charts
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
draw_charts(snakemake)
