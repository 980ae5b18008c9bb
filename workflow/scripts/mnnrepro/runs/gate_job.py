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
from mnnrepro.engines.pairs import Pair, modes_at
from mnnrepro.engines.records import engine_records
from mnnrepro.engines.registry import unread_settings
from mnnrepro.files import read_json
from mnnrepro.runs.greedy import forced_plan, gate_prompts, label_answers, run_greedy
from mnnrepro.runs.on_device import on_device, surviving
from mnnrepro.runs.staging import stage_images
from mnnrepro.runs.vision import reads_images

log = logging.getLogger(__name__)
STAGE = "the correctness gate"


@dataclass(frozen=True)
class GateJob:
    device_name: str
    device_spec: dict
    gate: dict  # the `correctness` section
    variants: dict[str, Variant]
    design: Design
    receipt: dict
    records: dict  # engine name -> its record
    tools: dict  # engine name -> its gate tool's record
    modes: dict  # (baseline, treatment) -> the pair's mode here (engines.pairs.modes_of)
    vision: bool  # the model takes images: the image prompts are asked too
    images: list  # (name as configured, local file)
    timeout_s: float
    prompt_tokens: int
    reference: dict | None  # the reference device's answers (emulation), else None
    reference_device: str

    @classmethod
    def of(cls, job) -> GateJob:
        """From a Snakemake job of rule run_greedy."""
        params, given = job.params, job.input
        return cls(
            job.wildcards.device, params.device, params.correctness, variants_of(params.variants),
            Design.of(params.design), read_json(given.receipt),
            engine_records(given.engines),
            {t["engine"]: t for t in map(read_json, given.gate_tools)},
            modes_at(given.modes),
            reads_images(given.manifest, params.model_formats),
            list(zip(params.image_names, given.images, strict=True)), params.timeout_s,
            params.prompt_tokens, read_json(given.reference) if given.reference else None,
            params.emulation_reference,
        )  # fmt: skip

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
        free = {name: self.answers_of(device, name, prompts) for name in sorted(self.variants)}
        # teacher forcing: each treatment fed its baseline's greedy answer, every step compared
        for base, treat in (pair.names for pair in pairs):
            fed = self.fed(device, treat, free[base], prompts)
            free[treat].setdefault("teacher_forced", {})[base] = fed
        # across devices (emulation): each variant fed the reference device's answer of the
        # same variant, so the emulated CPUs are compared step by step in its context
        for name in sorted(set(self.variants) & set(self.reference or {})):
            by_device = free[name].setdefault("teacher_forced_by_device", {})
            by_device[self.reference_device] = self.fed(device, name, self.reference[name], prompts)
        return free

    def answers_of(self, device, name: str, sent: list[dict], forced=None) -> dict:
        variant = self.variants[name]
        engine = variant.engine
        payload = run_greedy(
            device, self.receipt, self.records[engine], variant, [p["sent"] for p in sent],
            self.gate["max_new_tokens"], self.timeout_s, self.tools.get(engine),
            self.prompt_tokens, forced,
        )  # fmt: skip
        return label_answers(payload, sent)

    def fed(self, device, name: str, reference: dict, prompts: list[dict]) -> list[dict]:
        """name's answers when fed the reference payload's tokens (teacher forcing)."""
        plan = forced_plan(reference, prompts)
        if not plan:
            return []
        sent, tokens = [p for p, _ in plan], [t for _, t in plan]
        return self.answers_of(device, name, sent, tokens)["answers"]
