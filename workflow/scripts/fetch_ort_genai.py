from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.toolchain.ort_genai import fetch_ort_genai

log = log_to(snakemake.log[0])
record = fetch_ort_genai(
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
        # an Android engine's tools are built with the NDK (toolchain/tools.build_tool)
        **({"ndk": read_json(snakemake.input.ndk[0])} if snakemake.input.ndk else {}),
    },
)
print(f"fetched {record['pin']}", file=log)
