"""What an invocation will do, said before its job list: the experiment, its devices and what
they need, the variants and the pairs judged, invocations per block, blocks, and the device
time this asks for, with the source of that figure (Snakefile prints it in the main process:
a dry run shows it first).

The device time is an estimate: invocations (blocks x variants, for the main point and every
sweep point) times the seconds one invocation takes. Those seconds are, in this order of
preference: the mean of the same experiment's earlier invocations on that device (from its
bench.csv, priced as a run's budget prices them: runs/stopping_rows.invocation_seconds), else the
seconds its kind assumes plus the config's cool-down (a phone's 42 s:
benchmarks/results/phone_precision.md's 72 s less its 30 s cool-down; no phone was reachable
to measure one), else none. Where the simulation of the stopping rule holds, the expected
time too (benchmarks/results/sequential_stopping.json)."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import numpy as np

from mnnrepro.config import run_variants
from mnnrepro.plan.invocation_time import TABLE_HINT, estimated_invocation_s, push_s
from mnnrepro.records import read_rows
from mnnrepro.repetitions import Repetitions
from mnnrepro.runs.precision import affordable_looks
from mnnrepro.runs.stopping_rows import invocation_seconds

# the simulation of the paper's stopping rule (this workflow's own results file)
SIMULATION = Path(__file__).resolve().parents[4] / "benchmarks/results/sequential_stopping.json"
SIMULATED = (
    "simulated with the gains as claimed at 3 % noise per invocation; at a band's edge, at "
    "5 % noise or slower invocations it runs to the worst case: "
    "benchmarks/results/sequential_stopping.md"
)


def blocks_text(repetitions) -> str:
    repetitions = Repetitions.of(repetitions)
    low, high, target = repetitions.min, repetitions.max, repetitions.target_half_width
    if low == high:
        return f"{low} blocks"
    if repetitions.stops_on_verdict:
        budget = repetitions.budget_s
        cap = f", or {hours(budget)} of device time" if budget else ""
        looks = repetitions.planned_looks()
        at = f", judged after blocks {', '.join(map(str, looks))}" if looks else ""
        return f"{low} to {high} blocks (until every judged row's verdict is settled{cap}{at})"
    return f"{low} to {high} blocks (until every CI is within ±{target:.0%})"


def simulated_s(repetitions, per_block: int, per_invocation_s: float) -> float | None:
    """The expected benchmark time of this stopping rule where the simulation of it holds
    (benchmarks/results/sequential_stopping.json: the same rule and invocations per block; 3 %
    noise, the gains as claimed), at these seconds per invocation: interpolated between the
    invocation times it simulated (30 to 110 s), else None."""
    if not SIMULATION.is_file():
        return None
    simulated = json.loads(SIMULATION.read_text(encoding="utf-8"))
    if (
        simulated.get("repetitions") != Repetitions.of(repetitions).as_config()
        or simulated.get("invocations_per_block") != per_block
    ):
        return None
    times = [t for t in simulated.get("phone_times") or [] if not t.get("refused")]
    seconds = [t["invocation_s"] for t in times]
    if not seconds or not seconds[0] <= per_invocation_s <= seconds[-1]:
        return None
    expected = [t["phone_s_mean"] for t in times]
    return float(np.interp(per_invocation_s, seconds, expected))


EARLIER_COLUMNS = ["device", "model", "variant", "block", "wall_s"]


def earlier_invocation_s(bench_csv: Path, device: str, cooldown_s: float) -> float | None:
    """Mean device seconds of one earlier invocation on `device`, from an earlier run's
    bench.csv (stopping_rows.invocation_seconds of each), None without one."""
    if not bench_csv.is_file():
        return None
    seen = {}
    for row in read_rows(bench_csv, EARLIER_COLUMNS, TABLE_HINT):
        if row.get("device") != device or not row.get("wall_s"):
            continue
        seen[(row["model"], row["variant"], row["block"])] = invocation_seconds(
            row.get("device_s") or None,
            row["wall_s"],
            row.get("quiet_wait_s"),
            row.get("thermal_wait_s"),
            cooldown_s,
        )
    if not seen:
        return None
    return sum(seen.values()) / len(seen)


def hours(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def device_time(plan, device: str) -> str:
    """The time one device spends (the fewest blocks to the worst case, and the expected time
    where a simulation of the rule holds), what comes on top of the benchmark, and the source
    of the seconds per invocation."""
    config, bench = plan.config, plan.design.bench
    priced = invocation_price(plan, device)
    if priced is None:
        return "not estimated (no earlier run of this experiment on it)"
    per, source = priced
    per_block = len(run_variants(config)) * len(plan.models)
    repetitions = bench.blocks
    low, high = repetitions.min, repetitions.max
    sweep = bench.sweep_blocks
    sweep_low, sweep_high = sweep.min, sweep.max
    points = 0 if plan.device_kinds[device].emulated else len(plan.sweep)
    main_most, worst = per_block * high * per, ""
    if repetitions.stops_on_verdict:
        last = last_affordable_look(repetitions, per_block * per)
        main_most = per_block * last * per
        budget = repetitions.budget_s
        worst = f" (the worst case: block {last}, the last look" + (
            f" the {hours(budget)} budget affords)" if budget and last < high else " planned)"
        )
        if budget and main_most > budget:
            worst = (
                f" (the {hours(budget)} budget affords no look at these seconds: the run ends "
                "after its first block, asking for a larger bench.repetitions.budget_s)"
            )
    fewest = per_block * (low + points * sweep_low) * per
    most = main_most + per_block * points * sweep_high * per
    span = hours(fewest) if fewest == most else f"{hours(fewest)} to {hours(most)}"
    expected = simulated_s(repetitions, per_block, per) if not points else None
    said = f"; expected {hours(expected)} ({SIMULATED})" if expected else ""
    return f"{span} of benchmarks{worst}{said}{on_top(plan, device, per)}; source: {source}"


def invocation_price(plan, device: str) -> tuple[float, str] | None:
    """Seconds of one invocation on the device, with cool-down, and their source, in this
    order: this experiment's earlier invocations there; an estimate from the model's layout and
    the device's speed in its earlier runs of other experiments (plan/invocation_time.py); the
    seconds the device kind assumes; else None."""
    bench, kind = plan.design.bench, plan.device_kinds[device]
    earlier = earlier_invocation_s(
        Path(f"results/{plan.experiment.results_key}/bench.csv"), device, bench.cooldown_s
    )
    if earlier is not None:
        return earlier, f"this experiment's earlier invocations there, {earlier:.0f} s each"
    estimate = estimated_invocation_s(plan, device, Path("."))
    if estimate is not None:
        return estimate
    if kind.assumed_invocation_s:
        per = kind.assumed_invocation_s + bench.cooldown_s
        return per, (
            f"an assumed {per:g} s per invocation (the phone's {kind.assumed_invocation_s:g} s, "
            "benchmarks/results/phone_precision.md, and the cool-down)"
        )
    return None


def last_affordable_look(repetitions: Repetitions, per_block_s: float) -> int:
    """The last look a run that stops on its verdict can reach: its last, or under its budget
    the last whose blocks the budget affords (runs/precision.verdict_stop stops before a look
    that would pass it)."""
    looks = repetitions.stopping_looks()
    return (affordable_looks(looks, per_block_s, repetitions.budget_s) or looks[:1])[-1]


def on_top(plan, device: str, per: float) -> str:
    """What the device runs besides the benchmark: the correctness gate (each variant answers
    each prompt) and, with `attribution`, one profiled invocation per variant and phase, priced
    at the same seconds per invocation; the models' push where its size and the device's push
    rate are known (once per model and device: later pushes move only changed files)."""
    config = plan.config
    variants = len(config["variants"]) * len(plan.models)
    correctness = config["correctness"]
    prompts = len(correctness["prompts"]) + len(correctness.get("image_prompts", []))
    gate = variants * prompts
    profiled = variants * 2 if config["attribution"]["enabled"] else 0
    extra = f"{gate} gate" + (f" and {profiled} profiled" if profiled else "")
    pushed = push_s(plan, device, Path("."))
    push = (
        f"; the models' first push about {hours(pushed)}"
        if pushed is not None
        else "; the models' first push not priced (their size or this device's push rate is "
        "not known yet)"
    )
    return f"; on top, {extra} invocations, about {hours((gate + profiled) * per)}{push}"


def tree_downloads(section: str, tree: dict) -> list[tuple[str, str]]:
    """What fetch_source downloads for a source tree: the source unless it is a local checkout,
    and the KleidiAI it pins (a local checkout's too)."""
    found = [] if "path" in tree.get("source", {}) else [("fetch_source", f"the {section} source")]
    if tree.get("kleidiai"):
        version = tree["kleidiai"].get("version", "")
        found.append(("fetch_source", f"KleidiAI {version} (the {section} build's)"))
    return found


def downloads(plan) -> list[tuple[str, str]]:
    """What the plan fetches where it has not yet, each as (the rule that fetches it, what it
    is): the models, each source tree that is not a local checkout, the NDK, each fetched
    engine's pinned archives, an emulated device's userland, and llvm-mca for a prediction
    priced per instruction. The dry run's fetch jobs are these rules (tests/unit/
    test_config.py's whole-DAG dry runs hold them to it)."""
    config = plan.config
    found = [("fetch_modelscope_model", f"model {m} (ModelScope)") for m in plan.downloaded_models]
    found += [
        ("fetch_modelscope_checkpoint", f"{m}'s checkpoint (ModelScope)")
        for m in plan.checkpoint_models
    ]
    ndk = ("fetch_ndk", f"Android NDK {config.get('toolchains', {}).get('ndk', {}).get('version')}")
    for engine in plan.built_engines:
        kind, spec = plan.engine_kinds[engine], config["engines"][engine]
        found += tree_downloads(
            kind.config_section, kind.tree_of(spec, config.get(kind.config_section, {}))
        )
        if kind.platform(spec) == "android-arm64":
            found.append(ndk)
    for engine in plan.fetched_engines:
        kind, spec = plan.engine_kinds[engine], config["engines"][engine]
        found += kind.downloads(spec, config[kind.config_section])
        if kind.platform(spec) == "android-arm64":  # its C API tool is built with the NDK
            found.append(ndk)
    if any(plan.device_kinds[d].needs_userland for d in plan.devices):
        found.append(("fetch_emulation_userland", "QEMU and an arm64 userland (Debian's archive)"))
    if plan.settings.llvm_mca_pins:  # its folder names the release: usr/lib/llvm-23/bin
        release = PurePosixPath(plan.settings.llvm_mca_pins["bin"]).parent.name
        found.append(("fetch_llvm_mca", f"llvm-mca ({release}, Debian's archive)"))
    return sorted(set(found), key=found.index)


def overview(plan) -> list[str]:
    """The lines printed before the job list."""
    config = plan.config
    variants = run_variants(config)
    lines = [
        f"Plan of experiment `{plan.experiment.name}`"
        + (
            f" (a replay of {plan.experiment.replay}: no device, build or download)"
            if plan.experiment.replay
            else ""
        ),
        f"  models: {', '.join(plan.models)}",
        "  variants: " + ", ".join(f"{v} ({variants[v]['engine']})" for v in sorted(variants)),
        "  pairs judged: " + ", ".join(f"{t} vs {b}" for b, t in plan.judged_names),
    ]
    if plan.experiment.replay:
        return lines
    bench = plan.design.bench
    per_block = len(variants) * len(plan.models)
    lines.append(
        f"  per device: {per_block} invocations per block, {blocks_text(bench.blocks)}"
        + (
            f"; sweep: {len(plan.sweep)} more points of {blocks_text(bench.sweep_blocks)}"
            if plan.sweep
            else ""
        )
    )
    for device in plan.devices:
        kind = plan.device_kinds[device]
        time = device_time(plan, device)
        lines.append(f"  device `{device}` ({kind.key}): needs {kind.needs}; {time}")
    fetched = [what for _, what in downloads(plan)]
    if fetched:
        lines.append(f"  network, where not fetched yet: {', '.join(fetched)}")
    return lines
