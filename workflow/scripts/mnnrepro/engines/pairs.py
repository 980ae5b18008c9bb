"""The compared pairs of an experiment, as one type: each pair's baseline and treatment
variants, the engine its treatment runs, and how it is judged on a device, decided here once
from the treatment engine's record and the device's facts: against its claim, as a fallback
check (an SME2 treatment on a device without SME2) or as an equality check (SME2 cannot exist
for the builds' CPU). The gate (before any run), the benchmark's stopping rule (runs/precision),
the profile's check of what ran and the verdicts (analysis) all ask the pair."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from mnnrepro.design import SME2_SWITCH
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.records import read_record

if TYPE_CHECKING:
    from mnnrepro.design import Design

CLAIM, FALLBACK, EQUAL = "claim", "fallback", "equal"
MODES = (CLAIM, FALLBACK, EQUAL)


def needs_sme2(engine_record: EngineRecord) -> bool:
    return engine_record.kind.needs_sme2(engine_record)


@dataclass(frozen=True)
class Pair:
    key: str  # its config key: `comparison`, `comparison.also.<i>`, `comparison.aa_control`
    baseline: str  # variant names
    treatment: str
    baseline_engine: str | None = None  # the engines the two variants run (None: not asked)
    treatment_engine: str | None = None
    on_non_sme2_device: str = "fail"  # config key `comparison.on_non_sme2_device`
    # its baseline preloads the SME mask and its treatment does not (variants' `hide_sme`):
    # one binary, SME hidden from the engine in the baseline only
    masked: bool = False
    switches: str = SME2_SWITCH  # what its variants differ in (design.PairKey)

    @property
    def names(self) -> tuple[str, str]:
        return (self.baseline, self.treatment)

    @property
    def about_sme2(self) -> bool:
        """Whether its variants differ in SME2 (else in something else: `switches: other`)."""
        return self.switches == SME2_SWITCH

    @classmethod
    def compared(cls, design: Design) -> list[Pair]:
        """Every compared pair (the main one, then `comparison.also`), in config order, each
        knowing the engines its variants run (what its mode on a device asks; None where the
        experiment names no variants)."""
        comparison, engines = design.comparison, design.variant_engines
        return [
            cls(
                p.key,
                p.baseline,
                p.treatment,
                engines.get(p.baseline),
                engines.get(p.treatment),
                comparison.on_non_sme2_device,
                p.baseline in design.hiding_sme and p.treatment not in design.hiding_sme,
                p.switches,
            )
            for p in comparison.pairs
        ]

    @classmethod
    def judged(cls, design: Design) -> list[Pair]:
        """Every pair a summary judges: the compared pairs, then the A/A control (the baseline
        against its twin, Comparison.aa_variant) if asked."""
        comparison = design.comparison
        again = comparison.aa_variant
        aa = [cls("comparison.aa_control", comparison.baseline, again)] if again else []
        return [*cls.compared(design), *aa]

    def runs_sme2(self, mode: str, engines: dict[str, EngineRecord]) -> bool:
        """Whether the treatment's SME2 kernels should run on a device where the pair has this
        mode: judged against its claim, and the treatment needs SME2 (what the profile's
        check of what ran expects); never for a pair that switches something else."""
        return self.about_sme2 and mode == CLAIM and needs_sme2(engines[self.treatment_engine])

    def mode_on(self, engines: dict[str, EngineRecord], facts: dict) -> str:
        """CLAIM, FALLBACK or EQUAL on this device; raises early where the comparison cannot
        hold (engines: the engine records by name; facts: the device's). A pair that switches
        something other than SME2 is judged against its claim on every device."""
        if not self.about_sme2:
            return CLAIM
        treatment = engines[self.treatment_engine]
        if treatment.kind.sme2_impossible(treatment):
            return EQUAL
        if not needs_sme2(treatment) or facts.get("sme2"):
            return CLAIM
        if self.on_non_sme2_device == "fallback-check":
            return FALLBACK
        features = " ".join(facts.get("cpu_features", []))[:200]
        raise ValueError(
            f"device {facts['device']} has no sme2 (CPU features: {features} ...) but "
            f"treatment engine {treatment.name} is built with SME2 kernels; set config "
            "key `comparison.on_non_sme2_device: fallback-check` to run it as a fallback check "
            "(expectation: no regression)"
        )


def modes_record(design: Design, engines: dict[str, EngineRecord], facts: dict) -> dict:
    """The pair modes of one device (rule decide_pair_modes): each compared pair's mode there
    (Pair.mode_on), decided once, when the device's facts and the engines' records exist,
    and read by the gate, the stopping rule, the validity checks and the summary (modes_of).
    Raises where a comparison cannot hold on the device: before any run."""
    return {
        "device": facts["device"],
        "modes": [
            {
                "pair": p.key,
                "baseline": p.baseline,
                "treatment": p.treatment,
                "mode": p.mode_on(engines, facts),
                # a pair that switches something else says so (absent: SME2)
                **({} if p.about_sme2 else {"switches": p.switches}),
            }
            for p in Pair.compared(design)
        ],
    }


class PairModes(Mapping):
    """Each compared pair's mode on one device, read-only: (baseline, treatment) -> CLAIM,
    FALLBACK or EQUAL, as rule decide_pair_modes decided them (modes_record). A pair it does
    not hold is a KeyError naming the pair and the device."""

    def __init__(self, device: str, modes: Mapping[tuple[str, str], str]):
        unknown = sorted(set(modes.values()) - set(MODES))
        if unknown:
            raise ValueError(f"device {device}: unknown pair modes {unknown}; known: {MODES}")
        self.device = device
        self._modes = MappingProxyType(dict(modes))

    @classmethod
    def of(cls, record: dict) -> PairModes:
        """From a pair modes record (one device's)."""
        modes = {(m["baseline"], m["treatment"]): m["mode"] for m in record["modes"]}
        return cls(record["device"], modes)

    def __repr__(self) -> str:  # as a log line names them: "device d: off vs on claim, ..."
        said = ", ".join(f"{base} vs {treat} {mode}" for (base, treat), mode in self.items())
        return f"device {self.device}: {said}"

    def __getitem__(self, names: tuple[str, str]) -> str:
        try:
            return self._modes[names]
        except KeyError:
            raise KeyError(f"no mode for the pair {names} on device {self.device}") from None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._modes)

    def __len__(self) -> int:
        return len(self._modes)


def modes_of(record: dict) -> PairModes:
    """The pair modes of one device's pair modes record."""
    return PairModes.of(record)


def modes_at(path: str) -> PairModes:
    """modes_of the pair modes record at path (rule decide_pair_modes; checked as one)."""
    return modes_of(read_record(path, "pair_modes"))


def device_modes(records: list[dict]) -> dict[tuple[tuple[str, str], str], str]:
    """(pair's variant names, device) -> its mode, from every device's pair modes record."""
    return {(names, r["device"]): mode for r in records for names, mode in modes_of(r).items()}
