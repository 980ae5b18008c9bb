from mnnrepro.analysis.attribution import kernel_table, read_profiles
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
kernel_table(read_profiles(snakemake.input.profiles)).to_csv(snakemake.output.table, index=False)
