from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.ort_genai import fetch_wheels

log = log_to(snakemake.log[0])
record = fetch_wheels(
    snakemake.params.platform,
    snakemake.params.pins,
    snakemake.params.cache,
    snakemake.output.site,
)
write_json(
    snakemake.output.record,
    {
        "kind": "ort-genai",
        "engine": snakemake.params.name,
        **record,
        "runner": snakemake.params.runner,
    },
)
print(f"fetched {[w['file'] for w in record['wheels']]}", file=log)
