from pathlib import Path

from mnnrepro.engines.registry import kind_of_tree
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
kind = kind_of_tree(snakemake.wildcards.tree)
receipt = kind.provide_source(snakemake.params.tree, Path(snakemake.output.receipt).parent)
write_json(snakemake.output.receipt, receipt)
