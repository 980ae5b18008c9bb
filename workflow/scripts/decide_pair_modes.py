from mnnrepro.design import Design
from mnnrepro.engines.pairs import modes_record
from mnnrepro.engines.records import engine_records
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.records import read_record

log = log_to(snakemake.log[0])
record = modes_record(
    Design.of(snakemake.params.design),
    engine_records(snakemake.input.engines),
    read_record(snakemake.input.facts, "device_facts"),
)
for mode in record["modes"]:
    print(f"{mode['pair']}: {mode['treatment']} vs {mode['baseline']}: {mode['mode']}", file=log)
write_json(snakemake.output.modes, record)
