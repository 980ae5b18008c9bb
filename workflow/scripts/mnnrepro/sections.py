"""The config's `bench` and `stats` sections as frozen types. Each is built (Bench.of,
Stats.of) from a section the schema has already completed (config.check_schema, once, when
the plan is made): every key must be there and no other, so a key the schema added, renamed
or dropped fails here, naming it, and nothing below fills a default or reads the schema.
A value is written (files.plain) as its section (`as_written`): the configured fields, each
as the config spells it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType

from mnnrepro.errors import ReproError
from mnnrepro.repetitions import Repetitions

EMPTY: Mapping = MappingProxyType({})


def frozen(value):
    """value with every mapping read-only and every list a tuple (a type's field)."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: frozen(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen(item) for item in value)
    return value


def section_values(cls, section: Mapping, key: str, optional=()) -> dict:
    """The fields of cls from section, which must hold each configured field (those in optional
    may be absent) and nothing else. key: the section's config key, for the one-line error."""
    names = {f.name for f in fields(cls) if f.metadata.get("configured", True)}
    missing = sorted(names - set(section) - set(optional))
    unknown = sorted(set(section) - names)
    if missing or unknown:
        raise ReproError(
            f"config key `{key}`: "
            + "; ".join(
                part
                for part in (
                    f"missing {missing} (not completed from the schema)" if missing else "",
                    f"unknown {unknown}" if unknown else "",
                )
                if part
            )
        )
    return {name: frozen(value) for name, value in section.items()}


def not_configured(default=None):
    """A field the workflow sets at run time, never read from the config."""
    return field(default=default, metadata={"configured": False})


class Section:
    """What the section types share: the section as written, from their configured fields."""

    @property
    def as_written(self) -> dict:
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.metadata.get("configured", True)
        }


@dataclass(frozen=True)
class Stats(Section):
    """`stats`: how the speedup's interval is computed and how precise it should be."""

    interval: str  # t, bootstrap or anytime
    n_boot: int
    ci_level: float
    seed: int
    target_half_width: float
    familywise: bool
    dependence: str  # widen or assume-independent

    @classmethod
    def of(cls, section: Mapping) -> Stats:
        return cls(**section_values(cls, section, "stats"))


@dataclass(frozen=True)
class Bench(Section):
    """`bench`: what one invocation measures, and how often. A run's bench (a point's, the
    main point's) holds no `sweep`; a job that stages the vision phase's images sets
    `vision_set` (runs/vision.with_vision_set)."""

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

    @classmethod
    def of(cls, section: Mapping) -> Bench:
        return cls(**section_values(cls, section, "bench", optional=("sweep",)))

    @property
    def blocks(self) -> Repetitions:
        """`bench.repetitions`, decoded."""
        return Repetitions.of(self.repetitions)

    @property
    def sweep_blocks(self) -> Repetitions:
        """`bench.sweep.repetitions`, else the main point's."""
        return Repetitions.of(self.sweep.get("repetitions", self.repetitions))

    def with_vision_set(self, vision_set: Mapping | None) -> Bench:
        return replace(self, vision_set=frozen(vision_set))
