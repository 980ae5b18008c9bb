"""The correctness gate as one job (rule run_greedy): what it is handed (GateJob.of), what it
refuses before any run (a comparison that cannot hold on the device, a setting the engine
ignores), and the answers it collects: each variant's greedy answers, each treatment fed its
baseline's answer (teacher forcing), and on an emulated device each variant fed the reference
device's answer. runs/greedy.py runs one variant; analysis/correctness.py judges."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mnnrepro.config import refuse
from mnnrepro.design import Design, Variant, variants_of
from mnnrepro.engines.pairs import Pair, PairModes, modes_at
from mnnrepro.engines.records import engine_records
from mnnrepro.engines.registry import unread_settings
from mnnrepro.files import read_json
from mnnrepro.runs.greedy import forced_plan, gate_prompts, label_answers, run_greedy
from mnnrepro.runs.on_device import on_device, surviving
from mnnrepro.runs.staging import stage_images
from mnnrepro.runs.vision import reads_images
from mnnrepro.sections import Correctness

log = logging.getLogger(__name__)
STAGE = "the correctness gate"


@dataclass(frozen=True)
class GateJob:
    device_name: str
    device_spec: dict
    gate: Correctness
    variants: dict[str, Variant]
    design: Design
    receipt: dict
    records: dict  # engine name -> its record
    tools: dict  # engine name -> its gate tool's record
    modes: PairModes  # each pair's mode here (engines.pairs.modes_of)
    vision: bool  # the model takes images: the image prompts are asked too
    images: list  # (name as configured, local file)
    timeout_s: float
    prompt_tokens: int
    reference: dict | None  # the reference device's answers (emulation), else None
    reference_device: str

    @classmethod
    def of(cls, job) -> GateJob:
        """From the job (mnnrepro/job.Job) of rule run_greedy."""
        params, given = job.params, job.input
        return cls(
            job.wildcards.device,
            params.device,
            Correctness.of(params.correctness),
            variants_of(params.variants),
            Design.of(params.design),
            read_json(given.receipt),
            engine_records(given.engines),
            {t["engine"]: t for t in map(read_json, given.gate_tools)},
            modes_at(given.modes),
            reads_images(given.manifest, params.model_formats),
            list(zip(params.image_names, given.images, strict=True)),
            params.timeout_s,
            params.prompt_tokens,
            read_json(given.reference) if given.reference else None,
            params.emulation_reference,
        )

    def answers(self) -> dict:
        """Refuse what cannot hold, then the gate's answers on the device (a lost phone
        waited for, the gate asked again)."""
        pairs = Pair.compared(self.design)  # their modes here decided (rule decide_pair_modes)
        log.info("pair modes: %s", self.modes)
        unread = unread_settings(self.variants, self.records)  # a setting the engine ignores
        if unread:
            refuse(unread)
        with on_device(self.device_name, self.device_spec, STAGE) as device:
            return surviving(device, STAGE, lambda: self.asked(device, pairs))

    def asked(self, device, pairs) -> dict:
        images = stage_images(device, self.images) if self.vision else {}  # a vision model's
        prompts = gate_prompts(self.gate, images, self.vision)
        log.info("gate prompts: %s", [p["label"] for p in prompts])
        names = [pair.names for pair in pairs]
        bases: dict[str, list[str]] = {}
        for base, treat in names:
            bases.setdefault(treat, []).append(base)
        answered: dict = {}
        for name in bases_first(sorted(self.variants), bases):
            # teacher forcing: each treatment fed its baseline's greedy answer, every step
            # compared; across devices (emulation), each variant fed the reference device's
            # answer of the same variant, so the emulated CPUs are compared step by step in
            # its context. Asked with the variant's own answers, each prompt in one process
            # however it is fed (its baselines were asked before it)
            known = [base for base in bases.get(name, []) if base in answered]
            forcings = [(("teacher_forced", base), answered[base]) for base in known]
            if name in (self.reference or {}):
                by_device = ("teacher_forced_by_device", self.reference_device)
                forcings.append((by_device, self.reference[name]))
            answered[name] = self.answers_fed(device, name, prompts, forcings)
        for base, treat in names:  # a baseline asked after its treatment (pairs in a cycle)
            if base not in answered[treat].get("teacher_forced", {}):
                fed = self.fed(device, treat, answered[base], prompts)
                answered[treat].setdefault("teacher_forced", {})[base] = fed
        return {name: answered[name] for name in sorted(answered)}

    def answers_fed(self, device, name: str, prompts: list[dict], forcings: list) -> dict:
        """name's greedy answers to prompts, and under each forcing's key (field, source) its
        answers when fed that reference's tokens (runs/greedy.forced_plan), in one ask."""
        sent, forced, slots = list(prompts), [None] * len(prompts), []
        for key, reference in forcings:
            plan = forced_plan(reference, prompts)
            slots.append((key, len(sent), len(plan)))
            sent += [p for p, _ in plan]
            forced += [tokens for _, tokens in plan]
        payload = self.answers_of(device, name, sent, forced if len(sent) > len(prompts) else None)
        answers = payload["answers"]
        own = {**payload, "answers": answers[: len(prompts)]}
        for (field, source), start, count in slots:
            own.setdefault(field, {})[source] = answers[start : start + count]
        return own

    def answers_of(self, device, name: str, sent: list[dict], forced=None) -> dict:
        variant = self.variants[name]
        engine = variant.engine
        payload = run_greedy(
            device,
            self.receipt,
            self.records[engine],
            variant,
            [p["sent"] for p in sent],
            self.gate.max_new_tokens,
            self.timeout_s,
            self.tools.get(engine),
            self.prompt_tokens,
            forced,
        )
        return label_answers(payload, sent)

    def fed(self, device, name: str, reference: dict, prompts: list[dict]) -> list[dict]:
        """name's answers when fed the reference payload's tokens (teacher forcing)."""
        plan = forced_plan(reference, prompts)
        if not plan:
            return []
        sent, tokens = [p for p, _ in plan], [t for _, t in plan]
        return self.answers_of(device, name, sent, tokens)["answers"]


def bases_first(names: list[str], bases: dict[str, list[str]]) -> list[str]:
    """names ordered so that each variant comes after the baselines it is compared with
    (bases: treatment -> its baselines), where pairs allow it (a cycle: in names' order)."""
    order, pending = [], list(names)
    while pending:
        ready = [n for n in pending if not set(bases.get(n, ())) & set(pending) - {n}]
        order.append((ready or pending)[0])
        pending.remove(order[-1])
    return order
