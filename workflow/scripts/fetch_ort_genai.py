from mnnrepro.engines.ort_genai.fetch import fetch_ort_genai
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

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
        **record,
        "engine": snakemake.params.name,
        "runner": snakemake.params.runner,
        # an Android engine's tools are built with the NDK (toolchain/tools.build_tool)
        **({"ndk": read_json(snakemake.input.ndk[0])} if snakemake.input.ndk else {}),
    },
)
print(f"fetched {record['pin']}", file=log)
