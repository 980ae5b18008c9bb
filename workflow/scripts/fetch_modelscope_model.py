from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.models.mnn_files import is_vision_model, missing_files
from mnnrepro.models.modelscope import fetch_model
from mnnrepro.models.spec import Model

log_to(snakemake.log[0])
model = Model.of(snakemake.wildcards.model, snakemake.params.spec)
repo = model.repository(snakemake.params.route)
manifest = fetch_model(repo, snakemake.params.cache, snakemake.output[0], snakemake.wildcards.model)
if snakemake.params.route == "model":  # it must be loadable
    missing = missing_files(Path(snakemake.output[0]))
    if missing:
        raise SystemExit(
            f"models.{snakemake.wildcards.model}.modelscope: {repo['id']}@{repo['revision']} "
            f"is not an MNN LLM directory: {missing} missing"
        )
    manifest["takes_images"] = is_vision_model(snakemake.output[0])
write_json(snakemake.output.manifest, manifest)
