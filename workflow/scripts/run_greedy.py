from mnnrepro.bench import run_greedy
from mnnrepro.device import make_device
from mnnrepro.hashing import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.verdict import check_device_for

log_to(snakemake.log[0])
gate = snakemake.params.correctness
receipt = read_json(snakemake.input.receipt)
records = {r["engine"]: r for r in map(read_json, snakemake.input.engines)}
comparison = snakemake.params.comparison
treatment = records[snakemake.params.variants[comparison["treatment"]]["engine"]]
check_device_for(
    treatment, read_json(snakemake.input.facts), comparison.get("on_non_sme2_device", "fail")
)  # before any run
device = make_device(snakemake.wildcards.device, snakemake.params.device)
try:
    answers = {
        name: run_greedy(
            device,
            receipt,
            records[variant["engine"]],
            variant.get("runtime", {}),
            gate["prompts"],
            gate["max_new_tokens"],
            snakemake.params.timeout_s,
        )
        for name, variant in sorted(snakemake.params.variants.items())
    }
finally:
    device.close()
write_json(snakemake.output.greedy, answers)
