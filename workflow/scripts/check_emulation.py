from pathlib import Path

from mnnrepro.analysis.divergence import GateRule
from mnnrepro.analysis.emulation import agreement_table
from mnnrepro.files import read_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
devices = [Path(p).parent.name for p in snakemake.input.greedy]
greedy = dict(zip(devices, map(read_json, snakemake.input.greedy), strict=True))
facts = {f["device"]: f for f in map(read_json, snakemake.input.facts)}
table = agreement_table(
    greedy,
    facts,
    snakemake.params.reference,
    snakemake.wildcards.model,
    GateRule.of(snakemake.params.correctness),
)
table.to_csv(snakemake.output.table, index=False)
