from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.models.mnn_files import missing_files
from mnnrepro.models.modelscope import fetch_model

log_to(snakemake.log[0])
spec = snakemake.params.spec
repo = spec["modelscope"] if "modelscope" in spec else spec["export"]["from"]["modelscope"]
manifest = fetch_model(repo, snakemake.params.cache, snakemake.output[0], snakemake.wildcards.model)
if "modelscope" in spec:  # an MNN model, used as downloaded: it must be loadable
    missing = missing_files(Path(snakemake.output[0]))
    if missing:
        raise SystemExit(
            f"models.{snakemake.wildcards.model}.modelscope: {repo['id']}@{repo['revision']} "
            f"is not an MNN LLM directory: {missing} missing"
        )
write_json(snakemake.output.manifest, manifest)
