"""`bench.repetitions` as one type, whatever its YAML form: a fixed number of blocks (an
integer), precision on demand ({min, max, target_half_width}: stop when every interval is
that narrow), or stopping on the verdict ({min, max, until: verdict}, with `looks` planned
and a device-time `budget_s`). Decoded here and nowhere else (Repetitions.of); every reader
asks the type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Repetitions:
    min: int
    max: int
    target_half_width: float | None = None
    until: str | None = None  # "verdict": stop when every judged row is settled
    looks: int | None = None  # planned looks (evenly spaced from min to max), None: every block
    budget_s: float | None = None  # device time a run that stops on its verdict may take

    @classmethod
    def of(cls, value) -> Repetitions:
        """From the config's value (an integer or a mapping), or a Repetitions as it is."""
        if isinstance(value, Repetitions):
            return value
        if isinstance(value, Mapping):
            return cls(
                value["min"],
                value["max"],
                value.get("target_half_width"),
                value.get("until"),
                value.get("looks"),
                value.get("budget_s"),
            )
        return cls(int(value), int(value))

    @property
    def fixed(self) -> bool:
        """A fixed number of blocks (the integer form)."""
        return self.target_half_width is None and self.until is None

    @property
    def stops_on_verdict(self) -> bool:
        """The run stops when every judged row is settled, so every interval of it must keep
        its level at whichever look it stops (intervals.run_intervals)."""
        return self.until == "verdict"

    def as_config(self):
        """The value as the config writes it (an integer for fixed blocks)."""
        if self.fixed:
            return self.max
        given = {
            "min": self.min,
            "max": self.max,
            "target_half_width": self.target_half_width,
            "until": self.until,
            "looks": self.looks,
            "budget_s": self.budget_s,
        }
        return {key: value for key, value in given.items() if value is not None}

    def planned_looks(self) -> list[int] | None:
        """The blocks at which a run that stops on its verdict with `looks` may stop: that many
        evenly spaced blocks from min to max, both included. None: every block from min."""
        if not self.stops_on_verdict or not self.looks:
            return None
        n_min, n_max, k = self.min, self.max, self.looks
        return sorted({round(n_min + i * (n_max - n_min) / (k - 1)) for i in range(k)})

    def stopping_looks(self) -> list[int]:
        """Every block at which a run that stops on its verdict may stop: its planned looks,
        else each block from min to max."""
        return self.planned_looks() or list(range(self.min, self.max + 1))

    def ci_df(self) -> int | None:
        """Degrees of freedom of the t quantile after precision on demand (min - 1): the first
        look's, which keeps the coverage that stopping on a small variance estimate costs;
        None otherwise."""
        on_demand = self.target_half_width is not None and not self.stops_on_verdict
        return self.min - 1 if on_demand else None


def sweep_repetitions(bench: Mapping):
    """`bench.sweep.repetitions`, else the main point's `bench.repetitions`."""
    return (bench.get("sweep") or {}).get("repetitions", bench["repetitions"])
