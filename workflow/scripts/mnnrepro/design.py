"""What the stages below the plan know of an experiment, as one frozen type built once
(Design.of) from the plan's spec of it (plan.Plan.design_spec: its name and its
`comparison`, `stats` and `bench` sections, and each variant's engine), the schema's defaults
applied there and nowhere else. The runs' stopping rule, the gate, the validity checks and
the analysis receive it; none of them reads the config mapping. A job that runs variants gets
them as Variant (variants_of the specs its rule hands it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from mnnrepro.config import twin_of
from mnnrepro.repetitions import Repetitions
from mnnrepro.sections import Bench, Stats

SECTIONS = ("comparison", "stats", "bench")


@dataclass(frozen=True)
class Variant:
    """A variant (`variants.<name>`, or a sweep point's copy of it): the engine it runs, its
    runtime settings (every key: the schema completed them when the plan was made), the
    environment it runs with, and whether its processes preload the SME mask (`hide_sme`, absent
    = false: SME hidden from the engine, toolchain/sme_mask)."""

    name: str
    engine: str
    runtime: Mapping  # read-only, as every field: a job cannot change what it was handed
    env: Mapping
    hide_sme: bool = False

    @classmethod
    def of(cls, name: str, spec: dict) -> Variant:
        return cls(
            name,
            spec["engine"],
            MappingProxyType(dict(spec["runtime"])),
            MappingProxyType(dict(spec["env"])),
            bool(spec.get("hide_sme", False)),
        )


def variants_of(specs: dict) -> dict[str, Variant]:
    """Variant name -> the variant, from the specs a rule hands its job (Plan.variant_specs)."""
    return {name: Variant.of(name, spec) for name, spec in specs.items()}


def design_of_variant(spec: dict) -> dict:
    """What the design holds of a variant (`variants.<name>`): its engine, and `hide_sme` where
    it hides SME (absent otherwise: a design without masks is what it was before them)."""
    return {"engine": spec["engine"], **({"hide_sme": True} if spec.get("hide_sme") else {})}


# what a pair's two variants differ in (its config key `switches`): SME2, unless it says
# `other` (an instruction set, a thread count, a build option). Absent means SME2, so that a
# design that does not say is what it was before the key.
SME2_SWITCH = "sme2"


@dataclass(frozen=True)
class PairKey:
    """A compared pair as the config names it: its key (`comparison`, `comparison.also.<i>`),
    its two variants and what they differ in (SME2_SWITCH, or `other`)."""

    key: str
    baseline: str
    treatment: str
    switches: str = SME2_SWITCH


def pairs_of(comparison: dict) -> tuple[PairKey, ...]:
    """The pairs a `comparison` section names: the main one, then `comparison.also` in config
    order (what the config's own checks read before the whole design is built)."""
    also = [
        PairKey(
            f"comparison.also.{i}", p["baseline"], p["treatment"], p.get("switches", SME2_SWITCH)
        )
        for i, p in enumerate(comparison.get("also", []))
    ]
    main = comparison["baseline"], comparison["treatment"]
    return (PairKey("comparison", *main, comparison.get("switches", SME2_SWITCH)), *also)


@dataclass(frozen=True)
class Comparison:
    """`comparison`: the pairs, what the article claims per phase, and how it is judged."""

    baseline: str
    treatment: str
    tolerance: float
    claims: dict  # phase -> the claimed gain (`comparison.claims`)
    reference_gains: dict  # phase -> a published gain shown beside it
    aa_margin: float
    aa_control: bool
    on_non_sme2_device: str  # `fail` or `fallback-check`
    pairs: tuple[PairKey, ...]  # the main pair, then `comparison.also`, in config order
    section: dict  # as configured, defaults applied: what the summary's document quotes

    @classmethod
    def of(cls, section: dict) -> Comparison:
        return cls(
            section["baseline"],
            section["treatment"],
            section["tolerance"],
            dict(section["claims"]),
            dict(section["reference_gains"]),
            section["aa_margin"],
            bool(section["aa_control"]),
            section["on_non_sme2_device"],
            pairs_of(section),
            section,
        )

    @property
    def aa_variant(self) -> str | None:
        """The A/A control's variant (the baseline once more), if the config asks for it."""
        return twin_of(self.baseline) if self.aa_control else None

    @property
    def pair_names(self) -> list[tuple[str, str]]:
        """(baseline, treatment) of every compared pair, as tables select them."""
        return [(p.baseline, p.treatment) for p in self.pairs]


@dataclass(frozen=True)
class Design:
    name: str
    comparison: Comparison
    stats: Stats
    bench: Bench  # the main point's, with its `sweep`
    variant_engines: dict  # variant -> the engine it runs
    hiding_sme: frozenset = frozenset()  # the variants that preload the SME mask (hide_sme)

    @classmethod
    def of(cls, spec: dict) -> Design:
        """From the plan's spec (Plan.design_spec): every section as the schema completed it."""
        variants = spec["variants"]
        return cls(
            spec["experiment"],
            Comparison.of(spec["comparison"]),
            Stats.of(spec["stats"]),
            Bench.of(spec["bench"]),
            {name: v["engine"] for name, v in variants.items()},
            frozenset(name for name, v in variants.items() if v.get("hide_sme")),
        )

    @property
    def repetitions(self) -> Repetitions:
        return self.bench.blocks

    @property
    def sweep(self) -> Mapping:
        """`bench.sweep` (empty: none)."""
        return self.bench.sweep

    @property
    def sweep_repetitions(self) -> Repetitions:
        """`bench.sweep.repetitions`, else the main point's."""
        return self.bench.sweep_blocks
