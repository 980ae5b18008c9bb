from mnnrepro.config import refuse
from mnnrepro.engines.pairs import compared_pairs
from mnnrepro.engines.registry import unread_settings
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.runs.greedy import forced_plan, gate_prompts, label_answers, run_greedy
from mnnrepro.runs.on_device import on_device, surviving
from mnnrepro.runs.staging import stage_images
from mnnrepro.runs.vision import reads_images

log = log_to(snakemake.log[0])
gate = snakemake.params.correctness
receipt = read_json(snakemake.input.receipt)
records = {r["engine"]: r for r in map(read_json, snakemake.input.engines)}
tools = {t["engine"]: t for t in map(read_json, snakemake.input.gate_tools)}
pairs = compared_pairs(snakemake.params.comparison, snakemake.params.variants)
for pair in pairs:  # before any run: raises where the comparison cannot hold on this device
    pair.mode_on(records, read_json(snakemake.input.facts))
unread = unread_settings(snakemake.params.variants, records)  # a setting the engine ignores
if unread:
    refuse(unread)
# image prompts only where the model takes images
vision = reads_images(snakemake.input.manifest, snakemake.params.model_formats)


def gate_answers(device) -> dict:
    configured = list(zip(snakemake.params.image_names, snakemake.input.images, strict=True))
    images = stage_images(device, configured) if vision else {}  # only a vision model reads them
    prompts = gate_prompts(gate, images, vision)
    print(f"gate prompts: {[p['label'] for p in prompts]}", file=log)
    variants = snakemake.params.variants

    def answers_of(name: str, sent: list[dict], forced=None) -> dict:
        variant = variants[name]
        payload = run_greedy(
            device,
            receipt,
            records[variant["engine"]],
            variant,
            [p["sent"] for p in sent],
            gate["max_new_tokens"],
            snakemake.params.timeout_s,
            tools.get(variant["engine"]),
            snakemake.params.prompt_tokens,
            forced,
        )
        return label_answers(payload, sent)

    def fed(name: str, reference: dict) -> list[dict]:
        """name's answers when fed the reference payload's tokens (teacher forcing)."""
        plan = forced_plan(reference, prompts)
        if not plan:
            return []
        return answers_of(name, [p for p, _ in plan], [t for _, t in plan])["answers"]

    free = {name: answers_of(name, prompts) for name in sorted(variants)}
    # teacher forcing: each treatment fed its baseline's greedy answer, every step compared
    for base, treat in (pair.names for pair in pairs):
        free[treat].setdefault("teacher_forced", {})[base] = fed(treat, free[base])
    # across devices (emulation): each variant fed the reference device's answer of the same
    # variant, so the emulated CPUs are compared step by step in the reference's context
    if snakemake.input.reference:
        reference = read_json(snakemake.input.reference)
        where = snakemake.params.emulation_reference
        for name in sorted(set(variants) & set(reference)):
            by_device = free[name].setdefault("teacher_forced_by_device", {})
            by_device[where] = fed(name, reference[name])
    return free


stage = "the correctness gate"
with on_device(snakemake.wildcards.device, snakemake.params.device, stage) as device:
    answers = surviving(device, stage, lambda: gate_answers(device))
write_json(snakemake.output.greedy, answers)
