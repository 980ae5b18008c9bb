"""The config's sections that jobs read (`bench`, `stats`, `correctness`, `attribution`,
`bandwidth`, `engine_tests`) as frozen types. Each is built (Section.of) from a section the
schema has already completed (config.check_schema, once, when the plan is made): every key
must be there and no other, so a key the schema added, renamed or dropped fails here, naming
it, and nothing below fills a default or reads the schema.
A value is written (files.plain) as its section (`as_written`): the configured fields, each
as the config spells it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import ClassVar

from mnnrepro.errors import ReproError
from mnnrepro.repetitions import Repetitions, sweep_repetitions

EMPTY: Mapping = MappingProxyType({})


def frozen(value):
    """value with every mapping read-only and every list a tuple (a type's field)."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: frozen(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen(item) for item in value)
    return value


def not_configured(default=None):
    """A field the plan adds to its section (never read from the config); absent: default."""
    return field(default=default, metadata={"configured": False})


def configured_names(cls) -> set[str]:
    return {f.name for f in fields(cls) if f.metadata.get("configured", True)}


class Section:
    """What the section types share: built from their section (of), every configured key
    there but those in OPTIONAL, no key they do not know; written as their configured fields
    (as_written). KEY: the section's config key, which the one-line error names."""

    KEY: ClassVar[str]
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def of(cls, section: Mapping):
        known = {f.name for f in fields(cls)}
        missing = sorted(configured_names(cls) - set(section) - set(cls.OPTIONAL))
        unknown = sorted(set(section) - known)
        problems = [
            *([f"missing {missing} (not completed from the schema)"] if missing else []),
            *([f"unknown {unknown}"] if unknown else []),
        ]
        if problems:
            raise ReproError(f"config key `{cls.KEY}`: " + "; ".join(problems))
        return cls(**{name: frozen(value) for name, value in section.items()})

    @property
    def as_written(self) -> dict:
        return {name: getattr(self, name) for name in sorted(configured_names(type(self)))}


@dataclass(frozen=True)
class Stats(Section):
    """`stats`: how the speedup's interval is computed and how precise it should be."""

    KEY = "stats"
    interval: str  # t, bootstrap or anytime
    n_boot: int
    ci_level: float
    seed: int
    target_half_width: float
    familywise: bool
    dependence: str  # widen or assume-independent


@dataclass(frozen=True)
class Bench(Section):
    """`bench`: what one invocation measures, and how often. A run's bench (a point's, the
    main point's) holds no `sweep`; a job that stages the vision phase's images sets
    `vision_set` (runs/vision.with_vision_set)."""

    KEY = "bench"
    OPTIONAL = ("sweep",)
    prompt_tokens: int
    generate_tokens: int
    repetitions: int | Mapping  # as configured: Repetitions decodes it (Bench.blocks)
    warmup: int
    timeout_s: float
    retries: int
    cooldown_s: float
    max_temp_c: float | None
    thermal_zones: tuple
    thermal_timeout_s: float
    hot_start: str
    max_other_load: float | None
    quiet_timeout_s: float
    quiet_window_s: float
    power_sample_s: float
    vision: Mapping
    sweep: Mapping = field(default_factory=lambda: EMPTY)
    vision_set: Mapping | None = not_configured()

    @property
    def blocks(self) -> Repetitions:
        """`bench.repetitions`, decoded."""
        return Repetitions.of(self.repetitions)

    @property
    def sweep_blocks(self) -> Repetitions:
        """`bench.sweep.repetitions`, else the main point's."""
        return Repetitions.of(
            sweep_repetitions({"sweep": self.sweep, "repetitions": self.repetitions})
        )

    def with_vision_set(self, vision_set: Mapping | None) -> Bench:
        return replace(self, vision_set=frozen(vision_set))


@dataclass(frozen=True)
class Correctness(Section):
    """`correctness`: the gate's prompts and thresholds."""

    KEY = "correctness"
    prompts: tuple
    image_prompts: tuple
    max_new_tokens: int
    min_agreement: float
    near_tie_sd: float
    max_logit_diff_sd: float
    max_flip_share: float


@dataclass(frozen=True)
class Attribution(Section):
    """`attribution`: kernel profiling and its checks' thresholds; the plan adds the devices
    a prediction's own start-up is profiled on, and their phases (plan/settings.py)."""

    KEY = "attribution"
    OPTIONAL = ("devices",)
    enabled: bool
    sample_hz: int
    min_sme2_share: float
    min_sme2_blocks: int
    max_unresolved_share: float
    top: int
    devices: tuple | None = None  # None: every device
    startup_devices: tuple = not_configured(())
    prediction_phases: tuple = not_configured(())


@dataclass(frozen=True)
class Bandwidth(Section):
    """`bandwidth`: the bandwidth probe's settings."""

    KEY = "bandwidth"
    enabled: bool
    buffer_mib: int
    threads: int
    repetitions: int
    timeout_s: float


@dataclass(frozen=True)
class EngineTests(Section):
    """`engine_tests`: the engines' own tests, how long and at which precision."""

    KEY = "engine_tests"
    enabled: bool
    tests: tuple
    timeout_s: float
    precision: str
    threads: int


SECTION_TYPES = {t.KEY: t for t in (Stats, Bench, Correctness, Attribution, Bandwidth, EngineTests)}
