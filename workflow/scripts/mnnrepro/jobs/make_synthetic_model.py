"""The job of rule make_synthetic_model (workflow/rules/models.smk)."""

from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.models.spec import Model
from mnnrepro.models.synthetic import make_model


def run(job: Job) -> None:
    log = log_to(job.log[0])
    synthetic = Model.of(job.wildcards.model, job.params.spec).synthetic
    hf_config = make_model(synthetic.shape, synthetic.seed, job.output.hf)
    print(
        f"synthetic {synthetic.shape} (seed {synthetic.seed}): {hf_config['num_hidden_layers']} "
        f"layers, vocab {hf_config['vocab_size']}",
        file=log,
    )
