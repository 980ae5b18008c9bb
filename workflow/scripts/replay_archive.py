from pathlib import Path

from mnnrepro.logs import log_to
from mnnrepro.replay import replay

log = log_to(snakemake.log[0])
result = replay(snakemake.input.archive, str(Path(snakemake.output.table).parent))
print(
    f"replayed {result['experiment']} from {snakemake.input.archive}: "
    f"workflow {result['provenance']['workflow']}",
    file=log,
)
