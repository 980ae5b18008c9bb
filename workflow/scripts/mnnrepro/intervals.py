"""Which interval a run's rows are judged on, chosen from the config, and how it is worded.

The statistics below this (mnnrepro.stats) take numbers and a chosen interval
(stats.Interval) and return numbers; this module reads `bench.repetitions` and `stats` and
says which interval that is (ChosenInterval, run_intervals), and names it (interval_name):

- a fixed number of blocks: the configured `stats.interval` (Student t by default);
- precision on demand ({min, max, target_half_width}): Student t with the first look's
  degrees of freedom (min - 1), which keeps the coverage that stopping on a small variance
  estimate would cost;
- stopping on the verdict (`until: verdict`): Student t at the per-look level calibrated for
  the looks the run may stop at (every block from `min` to `max`, or the `looks` planned
  ones), sequential.sequential_t_level: the run keeps `ci_level` whichever look it stops at.

`stats.familywise: true` shares the level over the experiment's judged rows (every compared
pair in prefill and decode: Bonferroni), so that the chance that any row's interval misses
is at most 1 - ci_level; by default the level is per row. Every interval of a run comes from
run_intervals: the summary's, the mechanism check's, the sweep's and the stopping rule's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mnnrepro.assumptions import DEPENDENCE_P
from mnnrepro.phases import PHASES
from mnnrepro.repetitions import Repetitions
from mnnrepro.sections import Stats
from mnnrepro.sequential import sequential_t_level
from mnnrepro.stats import Interval

if TYPE_CHECKING:
    from mnnrepro.design import Design


@dataclass(frozen=True)
class ChosenInterval:
    """The interval every row of a run is judged on, and what the summary says of it."""

    interval: Interval  # what stats computes each interval with
    row_level: float  # the level one row keeps over the whole run
    family: int  # how many rows share the configured level
    target_half_width: float  # `stats.target_half_width`
    looks: tuple[int, ...] = ()  # the looks a run that stops on its verdict may stop at
    widens_for_dependence: bool = True  # `stats.dependence: widen`
    dependence_p: float | None = None  # the run's serial dependence check (with_dependence)
    serial_dependence: bool | None = None

    def with_dependence(self, p: float) -> ChosenInterval:
        """With one device x model's serial dependence check (its p-value): widened where
        dependence was found and the config widens for it."""
        found = bool(p < DEPENDENCE_P)
        widen = found and self.widens_for_dependence
        return replace(
            self,
            interval=replace(self.interval, widen=widen),
            dependence_p=p,
            serial_dependence=found,
        )


def run_intervals(stats: Stats, repetitions, family: int = 1) -> ChosenInterval:
    """The interval every row of a run with these repetitions is judged on, from the `stats`
    section (sections.Stats): its level per row shared over
    `family` rows (Bonferroni); after a run that stops on its verdict, Student t at the
    per-look level calibrated for its looks; after precision on demand, the first look's
    degrees of freedom."""
    repetitions = Repetitions.of(repetitions)
    row_level = 1 - (1 - stats.ci_level) / family
    kind, level, df, looks = stats.interval, row_level, repetitions.ci_df(), ()
    if repetitions.stops_on_verdict:
        looks = tuple(repetitions.stopping_looks())
        kind, level, df = "t", sequential_t_level(looks, row_level), None
    return ChosenInterval(
        Interval(kind, level, df, stats.n_boot, stats.seed),
        row_level,
        family,
        stats.target_half_width,
        looks,
        stats.dependence == "widen",
    )


def family_size(design: Design) -> int:
    """How many rows share the level: every compared pair's in prefill and decode with
    `stats.familywise`, else 1 (the level is per row)."""
    return len(PHASES) * len(design.comparison.pairs) if design.stats.familywise else 1


def experiment_intervals(design: Design, repetitions=None) -> ChosenInterval:
    """run_intervals for an experiment (its `bench.repetitions` unless given; its level shared
    over its judged pairs' rows with `stats.familywise`: family_size)."""
    if repetitions is None:
        repetitions = design.repetitions
    return run_intervals(design.stats, repetitions, family_size(design))


def interval_name(chosen: ChosenInterval) -> str:
    """The interval run_intervals chose, as the summary and the job messages name it."""
    family, interval = chosen.family, chosen.interval
    row = level_text(chosen.row_level)
    together = (
        f"all {family} rows at once {level_text(1 - (1 - chosen.row_level) * family)} (Bonferroni)"
        if family > 1
        else ""
    )
    shared = f"; {row} per row: {together}" if together else ""
    if interval.kind == "bootstrap":
        return f"paired bootstrap ({interval.n_boot} resamples){shared}"
    if interval.kind == "anytime":
        return f"anytime-valid t on log ratios (Lindon et al.){shared}"
    if looks := chosen.looks:
        first, last = looks[0], looks[-1]
        where = (
            f"blocks {first}-{last}"
            if len(looks) == last - first + 1
            else f"{len(looks)} planned looks from block {first} to {last}"
        )
        at_stop = f"{row} per row at the stop" + (f"; {together}" if together else "")
        return (
            f"t on log ratios at {interval.level:.2%} per look, calibrated for a stop "
            f"at any of {where}: {at_stop}"
        )
    df = interval.df
    return "t on log ratios" + (f" (df {df}, after stopping)" if df is not None else "") + shared


def level_text(level: float) -> str:
    """95% or 98.75%: a level with the decimals it has (up to two)."""
    return f"{level * 100:.2f}".rstrip("0").rstrip(".") + "%"
