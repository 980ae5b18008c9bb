from mnnrepro.analysis.attribution import read_profiles
from mnnrepro.analysis.validity import check
from mnnrepro.design import Design, variants_of
from mnnrepro.engines.pairs import modes_at
from mnnrepro.engines.records import engine_records
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.records import read_record

log_to(snakemake.log[0])
result = check(
    read_record(snakemake.input.greedy, "greedy"),
    read_record(snakemake.input.facts, "device_facts"),
    snakemake.wildcards.model,
    Design.of(snakemake.params.design),
    modes_at(snakemake.input.modes),
    snakemake.params.correctness,
    engine_records(snakemake.input.engines),
    variants_of(snakemake.params.variants),
    read_profiles(snakemake.input.profiles) if snakemake.input.profiles else None,
    snakemake.params.attribution,
    {r["engine"]: r for r in map(read_json, snakemake.input.engine_tests)},
)
write_json(snakemake.output.validity, result)
