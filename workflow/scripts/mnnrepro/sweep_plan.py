"""`bench.sweep`: the points it measures around the main one, each point's bench settings and
variants, and the sweep a pair cannot take."""

from __future__ import annotations

from mnnrepro.config import comparison_keys, with_runtime_defaults

SWEEP_KEYS = ("prompt_tokens", "generate_tokens", "thread_num")


def thread_nums(variants: dict) -> dict[str, int]:
    """Variant -> the thread count it runs with (llm_bench's default where it sets none)."""
    return {
        name: with_runtime_defaults(v.get("runtime", {}))["thread_num"]
        for name, v in variants.items()
    }


def sweep_problems(config: dict) -> list[str]:
    """A thread sweep sets every variant's thread_num: it cannot sweep a pair that differs in
    it (both sides would become the same)."""
    threads = config.get("bench", {}).get("sweep", {}).get("thread_num")
    if not threads:
        return []
    problems = []
    threads_of = thread_nums(config["variants"])
    for key, pair in comparison_keys(config["comparison"]):
        values = {name: threads_of.get(name) for name in (pair["baseline"], pair["treatment"])}
        if len(set(values.values())) > 1:
            problems.append(
                f"config key `bench.sweep.thread_num`: the pair `{key}` differs in thread_num "
                f"({values}); a thread sweep sets both to the same value - drop it, or compare "
                "variants that differ in something else"
            )
    return problems


def sweep_points(config: dict) -> dict[str, dict]:
    """Point label -> its settings. Each swept dimension is varied on its own around the main
    point (the others keep the main point's value), so the cost grows with the sum of the
    lists, not their product; a value equal to the main point's is the main point itself and
    is not measured twice. thread_num None: each variant's own."""
    bench = config["bench"]
    sweep = bench.get("sweep") or {}
    main = {
        "prompt_tokens": bench["prompt_tokens"],
        "generate_tokens": bench["generate_tokens"],
        "thread_num": None,
    }
    common_threads = set(thread_nums(config["variants"]).values())
    points = {}
    for key in SWEEP_KEYS:
        for value in sweep.get(key) or []:
            if value == main[key] or (key == "thread_num" and {value} == common_threads):
                continue
            point = {**main, key: value}
            points[point_label(point)] = point
    return points


def point_label(point: dict) -> str:
    """`p256-n32-t2` (t-: each variant's own thread_num)."""
    threads = point["thread_num"]
    return (
        f"p{point['prompt_tokens']}-n{point['generate_tokens']}-t"
        f"{'-' if threads is None else threads}"
    )


def point_bench(bench: dict, point: dict) -> dict:
    """The bench settings of one sweep point (its own P and N and the sweep's repetitions;
    no nested sweep)."""
    return {
        **{k: v for k, v in bench.items() if k != "sweep"},
        "prompt_tokens": point["prompt_tokens"],
        "generate_tokens": point["generate_tokens"],
        "repetitions": sweep_repetitions(bench),
    }


def sweep_repetitions(bench: dict):
    """`bench.sweep.repetitions`, else the main point's `bench.repetitions`."""
    return (bench.get("sweep") or {}).get("repetitions", bench["repetitions"])


def point_variants(variants: dict, point: dict) -> dict:
    """Every variant of one sweep point (thread_num set where the point sets it)."""
    if point["thread_num"] is None:
        return variants
    return {
        name: {**v, "runtime": {**v.get("runtime", {}), "thread_num": point["thread_num"]}}
        for name, v in variants.items()
    }
