"""Which interval a run's rows are judged on, chosen from the config, and how it is worded.

The statistics below this (mnnrepro.stats) take numbers and a chosen interval and return
numbers; this module reads `bench.repetitions` and `stats` and says which interval that is:

- a fixed number of blocks: the configured `stats.interval` (Student t by default);
- precision on demand ({min, max, target_half_width}): Student t with the first look's
  degrees of freedom (min - 1), which keeps the coverage that stopping on a small variance
  estimate would cost;
- stopping on the verdict (`until: verdict`): Student t at the per-look level calibrated for
  the looks the run may stop at (every block from `min` to `max`, or the `looks` planned
  ones), stats.sequential_t_level: the run keeps `ci_level` whichever look it stops at.

`stats.familywise: true` shares the level over the experiment's judged rows (every compared
pair in prefill and decode: Bonferroni), so that the chance that any row's interval misses
is at most 1 - ci_level; by default the level is per row. Every interval of a run comes from
run_intervals: the summary's, the mechanism check's, the sweep's and the stopping rule's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnnrepro.repetitions import Repetitions
from mnnrepro.stats import PHASES, log_ratio_interval, sequential_t_level

if TYPE_CHECKING:
    from mnnrepro.design import Design


def run_intervals(stats_cfg: dict, repetitions, family: int = 1) -> tuple[dict, int | None]:
    """The `stats` section and the t quantile's degrees of freedom every interval of a run with
    these repetitions is computed with. `ci_level` of the result is the level of each
    interval as computed; `row_level` what it keeps for one row over the whole run;
    `family` how many rows share the configured level."""
    repetitions = Repetitions.of(repetitions)
    row_level = 1 - (1 - stats_cfg["ci_level"]) / family
    chosen = {**stats_cfg, "ci_level": row_level, "row_level": row_level, "family": family}
    if not repetitions.stops_on_verdict:
        return chosen, repetitions.ci_df()
    looks = repetitions.stopping_looks()
    return {
        **chosen,
        "interval": "t",
        "ci_level": sequential_t_level(looks, row_level),
        "looks": len(looks),
        "first_look": looks[0],
        "last_look": looks[-1],
    }, None


def family_size(design: Design) -> int:
    """How many rows share the level: every compared pair's in prefill and decode with
    `stats.familywise`, else 1 (the level is per row)."""
    return len(PHASES) * len(design.comparison.pairs) if design.stats.get("familywise") else 1


def experiment_intervals(design: Design, repetitions=None) -> tuple[dict, int | None]:
    """run_intervals for an experiment (its `bench.repetitions` unless given; its level shared
    over its judged pairs' rows with `stats.familywise`: family_size)."""
    if repetitions is None:
        repetitions = design.repetitions
    return run_intervals(design.stats, repetitions, family_size(design))


def interval_name(stats_cfg: dict, df: int | None) -> str:
    """The interval run_intervals chose, as the summary and the job messages name it."""
    family = stats_cfg.get("family", 1)
    row = level_text(stats_cfg.get("row_level", stats_cfg["ci_level"]))
    together = (
        f"all {family} rows at once "
        f"{level_text(1 - (1 - stats_cfg['row_level']) * family)} (Bonferroni)"
        if family > 1
        else ""
    )
    shared = f"; {row} per row: {together}" if together else ""
    if stats_cfg.get("interval", "t") == "bootstrap":
        return f"paired bootstrap ({stats_cfg['n_boot']} resamples){shared}"
    if stats_cfg.get("interval", "t") == "anytime":
        return f"anytime-valid t on log ratios (Lindon et al.){shared}"
    if looks := stats_cfg.get("looks"):
        first, last = stats_cfg["first_look"], stats_cfg["last_look"]
        where = (
            f"blocks {first}-{last}"
            if looks == last - first + 1
            else f"{looks} planned looks from block {first} to {last}"
        )
        at_stop = f"{row} per row at the stop" + (f"; {together}" if together else "")
        return (
            f"t on log ratios at {stats_cfg['ci_level']:.2%} per look, calibrated for a stop "
            f"at any of {where}: {at_stop}"
        )
    return "t on log ratios" + (f" (df {df}, after stopping)" if df is not None else "") + shared


def level_text(level: float) -> str:
    """95% or 98.75%: a level with the decimals it has (up to two)."""
    return f"{level * 100:.2f}".rstrip("0").rstrip(".") + "%"


def stopping_interval(repetitions, ci_level: float, family: int = 1):
    """(log ratios, widen) -> (low, high): the interval a rule that stops on the verdict judges
    on, the one the summary then reports (run_intervals); widen: serial dependence was found in
    the run (stats.log_ratio_interval)."""
    cfg, df = run_intervals({"ci_level": ci_level}, repetitions, family)
    return lambda logs, widen=False: log_ratio_interval(
        logs, cfg["ci_level"], cfg["interval"], None, 0, df, widen
    )


def widens_for_dependence(stats_cfg: dict) -> bool:
    """`stats.dependence: widen` (the default): intervals are widened where the run's blocks
    show serial dependence."""
    return stats_cfg.get("dependence", "widen") == "widen"
