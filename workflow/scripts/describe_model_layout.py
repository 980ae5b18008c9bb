from pathlib import Path

from mnnrepro.analysis.ceiling import describe_model
from mnnrepro.files import write_json
from mnnrepro.logs import log_to

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
