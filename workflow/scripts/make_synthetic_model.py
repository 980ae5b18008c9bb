from mnnrepro.logs import log_to
from mnnrepro.models.synthetic import make_model

log = log_to(snakemake.log[0])
spec = snakemake.params.spec["synthetic"]
config = make_model(spec["shape"], spec["seed"], snakemake.output.hf)
print(
    f"synthetic {spec['shape']} (seed {spec['seed']}): {config['num_hidden_layers']} layers, "
    f"vocab {config['vocab_size']}",
    file=log,
)
