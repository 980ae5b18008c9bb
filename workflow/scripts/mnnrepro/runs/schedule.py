"""The order of benchmark invocations: interleaved and counterbalanced.

Each repetition is one block holding every variant once. The order inside a block
rotates (A B, B A for two variants; a Latin-square rotation for more), so that no
variant always runs first, right after a cool-down, or last, on a warm chip."""

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


def interleaved(variants: list[str], repetitions: int) -> list[Invocation]:
    if len(set(variants)) != len(variants) or not variants:
        raise ValueError(f"variants must be distinct and non-empty, got {variants}")
    if repetitions < 1:
        raise ValueError("repetitions must be >= 1")
    k = len(variants)
    plan = []
    for block in range(repetitions):
        shift = block % k
        rotated = variants[shift:] + variants[:shift]
        for position, variant in enumerate(rotated):
            plan.append(Invocation(block, position, len(plan), variant))
    return plan
