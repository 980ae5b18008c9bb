from mnnrepro.logs import log_to
from mnnrepro.models.spec import Model
from mnnrepro.models.synthetic import make_model

log = log_to(snakemake.log[0])
synthetic = Model.of(snakemake.wildcards.model, snakemake.params.spec).synthetic
config = make_model(synthetic.shape, synthetic.seed, snakemake.output.hf)
print(
    f"synthetic {synthetic.shape} (seed {synthetic.seed}): {config['num_hidden_layers']} "
    f"layers, vocab {config['vocab_size']}",
    file=log,
)
