"""`bench.sweep`: the points it measures around the main one, each point's bench settings and
variants, and the sweep a pair cannot take."""

from __future__ import annotations

from dataclasses import dataclass, replace

from mnnrepro.design import Variant
from mnnrepro.repetitions import sweep_repetitions
from mnnrepro.sections import Bench

SWEEP_KEYS = ("prompt_tokens", "generate_tokens", "thread_num", "cpu_sme_core_num")
# the swept dimensions that are runtime settings, set in every variant
RUNTIME_SWEEPS = ("thread_num", "cpu_sme_core_num")


def thread_nums(variants: dict[str, Variant]) -> dict[str, int]:
    """Variant -> the thread count it runs with (llm_bench's default where it sets none)."""
    return runtime_values(variants, "thread_num")


def runtime_values(variants: dict[str, Variant], key: str) -> dict:
    """Variant -> its value of a runtime setting (the schema's default where not configured;
    None: the engine's)."""
    return {name: variant.runtime.get(key) for name, variant in variants.items()}


def sweep_problems(sweep: dict, variants: dict[str, Variant], pairs) -> list[str]:
    """A runtime sweep (`bench.sweep`) sets the setting in every variant: it cannot sweep a
    pair (design.PairKey) that differs in it (both sides would become the same)."""
    problems = []
    for setting in RUNTIME_SWEEPS:
        if not sweep.get(setting):
            continue
        of = runtime_values(variants, setting)
        for key, baseline, treatment in ((p.key, p.baseline, p.treatment) for p in pairs):
            values = {name: of.get(name) for name in (baseline, treatment)}
            if len(set(values.values())) > 1:
                problems.append(
                    f"config key `bench.sweep.{setting}`: the pair `{key}` differs in {setting} "
                    f"({values}); the sweep sets both to the same value - drop it, or compare "
                    "variants that differ in something else"
                )
    return problems


@dataclass(frozen=True)
class SweepPoint:
    """One point of `bench.sweep`: its prompt and generated tokens, and the runtime settings
    it sets in every variant (None: each variant's own)."""

    prompt_tokens: int
    generate_tokens: int
    thread_num: int | None = None
    cpu_sme_core_num: int | None = None

    @property
    def label(self) -> str:
        """`p256-n32-t2` (t-: each variant's own thread_num), `...-scn1` where the point sets
        cpu_sme_core_num."""
        threads, sme = self.thread_num, self.cpu_sme_core_num
        return (
            f"p{self.prompt_tokens}-n{self.generate_tokens}-t"
            f"{'-' if threads is None else threads}" + ("" if sme is None else f"-scn{sme}")
        )

    def bench(self, bench: dict) -> dict:
        """The bench settings of this point (its own P and N and the sweep's repetitions; no
        nested sweep)."""
        return {
            **{k: v for k, v in bench.items() if k != "sweep"},
            "prompt_tokens": self.prompt_tokens,
            "generate_tokens": self.generate_tokens,
            "repetitions": sweep_repetitions(bench),
        }

    def variants(self, variants: dict) -> dict:
        """Every variant at this point (its runtime settings set where the point sets them)."""
        settings = {k: getattr(self, k) for k in RUNTIME_SWEEPS if getattr(self, k) is not None}
        if not settings:
            return variants
        return {
            name: {**v, "runtime": {**v.get("runtime", {}), **settings}}
            for name, v in variants.items()
        }


def sweep_points(bench: Bench, variants: dict[str, Variant]) -> dict[str, SweepPoint]:
    """Point label -> the point. Each swept dimension is varied on its own around the main
    point (the others keep the main point's value), so the cost grows with the sum of the
    lists, not their product; a value equal to the main point's is the main point itself and
    is not measured twice. thread_num None: each variant's own."""
    sweep = bench.sweep
    main = SweepPoint(bench.prompt_tokens, bench.generate_tokens)
    common = {k: set(runtime_values(variants, k).values()) for k in RUNTIME_SWEEPS}
    points = {}
    for key in SWEEP_KEYS:
        for value in sweep.get(key) or []:
            if value == getattr(main, key) or {value} == common.get(key):
                continue
            point = replace(main, **{key: value})
            points[point.label] = point
    return points
