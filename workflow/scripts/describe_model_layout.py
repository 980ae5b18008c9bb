from pathlib import Path

from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.models.mnn_layout import describe_model

log_to(snakemake.log[0])
write_json(
    snakemake.output.layout,
    {
        "model": snakemake.wildcards.model,
        **describe_model(
            snakemake.input.model,
            Path(snakemake.input.checkpoint[0], "config.json")
            if snakemake.input.checkpoint
            else None,
        ),
    },
)
