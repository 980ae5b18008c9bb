"""What an engine's prefill and decode timers hold: the one vocabulary of steps every kind
states its benchmark's timers in (EngineKind.timers), the table docs/verdicts.md shows, and
which engines' speeds are like for like (the same steps in both timers).

The workflow's definition of a phase's time is the engine's own work on the tokens: embedding
them, the layers and the output head. A runner may hold more inside its timer (reading the
logits out, its greedy pick, the engine's sampler, detokenising): each kind says which, from
its runner's code. Gains within a pair are ratios of one timer and hold whatever it holds;
tokens per second across engines compare only where the steps are the same."""

from __future__ import annotations

from dataclasses import dataclass

# the steps a timer may hold, in the order a token goes through them
STEPS = {
    "embedding": "token ids to embeddings",
    "forward": "the layers and the output head (the last position's logits)",
    "logits read": "the last position's logits copied out of the engine",
    "greedy pick": "the runner's argmax over them",
    "sampling": "the engine's own sampler",
    "detokenising": "the token back to text",
}
DEFINITION = ("embedding", "forward")  # the workflow's phase time: the engine's own work
# the workflow's runners (engines/runner/runner_timing.py, the ONNX Runtime C API runner): the
# engine's forward on token ids, then the last logits read out and their argmax
RUNNER_STEPS = ("embedding", "forward", "logits read", "greedy pick")


@dataclass(frozen=True)
class Timers:
    """A kind's benchmark timers: the steps inside its prefill and its decode timer (STEPS),
    and where that is read in the code that times them."""

    prefill: tuple[str, ...]
    decode: tuple[str, ...]
    source: str

    def __post_init__(self):
        unknown = [s for s in (*self.prefill, *self.decode) if s not in STEPS]
        if unknown:
            raise ValueError(f"unknown timer steps {unknown}; known: {list(STEPS)}")

    def beyond_definition(self, phase: str) -> list[str]:
        """What this timer holds beyond the workflow's definition, and what of it it leaves
        out ("without ..."), in STEPS' order."""
        held = getattr(self, phase)
        beyond = [step for step in STEPS if step in held and step not in DEFINITION]
        return [*beyond, *(f"without {step}" for step in DEFINITION if step not in held)]


def like_for_like(timers: dict[str, Timers]) -> list[list[str]]:
    """Engine (or kind) names grouped by the same steps in both timers: speeds compare within a
    group only."""
    groups: dict[tuple, list[str]] = {}
    for name, timer in timers.items():
        groups.setdefault((timer.prefill, timer.decode), []).append(name)
    return list(groups.values())


def timers_table(timers: dict[str, Timers]) -> list[str]:
    """The markdown table docs/verdicts.md holds (tests/unit/test_timers.py keeps them one)."""
    lines = [
        "| kind | prefill timer | decode timer (per token) | beyond the definition | read in |",
        "|---|---|---|---|---|",
    ]
    for name, timer in timers.items():
        beyond = [
            f"{phase}: {', '.join(steps)}"
            for phase in ("prefill", "decode")
            if (steps := timer.beyond_definition(phase))
        ]
        lines.append(
            f"| `{name}` | {', '.join(timer.prefill)} | {', '.join(timer.decode)} | "
            f"{'; '.join(beyond) or 'nothing'} | {timer.source} |"
        )
    return lines
