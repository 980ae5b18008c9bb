from mnnrepro.hashing import write_json
from mnnrepro.logs import log_to
from mnnrepro.modelscope_source import fetch_model

log_to(snakemake.log[0])
spec = snakemake.params.spec
repo = spec["modelscope"] if "modelscope" in spec else spec["export"]["from"]["modelscope"]
manifest = fetch_model(repo, snakemake.params.cache, snakemake.output[0], snakemake.wildcards.model)
write_json(snakemake.output.manifest, manifest)
