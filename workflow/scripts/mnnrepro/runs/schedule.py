"""The order of benchmark invocations: interleaved and counterbalanced for any number of variants.

Each repetition is one block holding every variant once. The orders of the blocks come from a
Williams design, so that no variant always runs first (right after a cool-down) or last (on a
warm chip), and every two variants run each way round equally often:

* the rows of a Williams square (a Latin square in which every variant follows every other
  exactly once) and, for an odd number of variants, their mirror images;
* taken so that each row is followed by its reverse: in every two consecutive blocks each pair
  runs once each way, so a schedule with an even number of blocks (or stopped after one) is
  exactly balanced for every pair, and an odd one is off by one block at most;
* over a whole cycle (k blocks for k variants when k is even, 2k when odd) every variant holds
  every position equally often.

For two variants this is A B, B A, A B, ... The order actually run is recorded per invocation
(`block`, `position`) and the report counts, per compared pair, how often each ran first
(`order_balance`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Invocation:
    block: int  # repetition index, 0-based: pairs samples across variants
    position: int  # place inside the block
    run_order: int  # place in the whole schedule
    variant: str

    def to_dict(self) -> dict:
        return asdict(self)


def williams_rows(k: int) -> list[list[int]]:
    """The block orders of one cycle, as indices 0..k-1, each row followed by its reverse."""
    # the standard first row 0, 1, k-1, 2, k-2, ...; row r adds r (mod k) to each entry
    first = [0]
    low, high = 1, k - 1
    while len(first) < k:
        first.append(low)
        low += 1
        if len(first) < k:
            first.append(high)
            high -= 1
    square = [[(entry + r) % k for entry in first] for r in range(k)]
    if k % 2 == 0:
        # row r + k/2 is row r reversed: pair them up, each row followed by its mirror
        return [row for r in range(k // 2) for row in (square[r], square[r + k // 2])]
    return [row for r in range(k) for row in (square[r], square[r][::-1])]


def interleaved(variants: list[str], repetitions: int) -> list[Invocation]:
    if len(set(variants)) != len(variants) or not variants:
        raise ValueError(f"variants must be distinct and non-empty, got {variants}")
    if repetitions < 1:
        raise ValueError("repetitions must be >= 1")
    rows = williams_rows(len(variants))
    plan = []
    for block in range(repetitions):
        for position, index in enumerate(rows[block % len(rows)]):
            plan.append(Invocation(block, position, len(plan), variants[index]))
    return plan


def order_balance(positions: dict[int, dict[str, int]], first: str, second: str) -> dict:
    """How often `first` ran before `second` in the blocks holding both (block -> variant ->
    position, as recorded): {"first_before": n, "second_before": m, "blocks": n + m}."""
    before = after = 0
    for where in positions.values():
        if first in where and second in where:
            if where[first] < where[second]:
                before += 1
            else:
                after += 1
    return {"first_before": before, "second_before": after, "blocks": before + after}
