"""Stopping on the verdict: coverage, verdicts, bias and phone time of `until: verdict`.

Usage: python benchmarks/sequential_stopping.py [--runs 2000] [--seed 11]

Simulates config/paper.yaml's run through the project's own stopping code
(mnnrepro.runs.precision: verdict_thresholds, StoppingRule, verdict_stop): its variants in
the schedule's own interleaved order (runs.schedule.interleaved), the claim pair, the A/A
twin and the mechanism check, at every look until every row is settled, the last look or the
last look the budget affords. The same simulated runs go through five rules: the workflow's
(the t interval at the level calibrated for the looks, sequential.sequential_t_level, widened
where the run's dependence check finds serial dependence), the same never widened, the
anytime-valid interval (the boundary before), the plain Student t (what optional stopping
costs it) and a fixed 30 blocks on the t interval. For each scenario (per-invocation noise
levels, heavy tails, a shared drift, a shared thermal step, one outlier invocation, and four
whose noise does not cancel in the ratio: each build's own AR(1) wander at two strengths, a
treatment more sensitive to heat, the treatment alone throttled; true gains at the claim, at
and around the band's edges, and zero):

- coverage at the stop: per judged row, the share of runs whose final interval holds the true
  speedup (the gain before any disturbance; for the workflow's rule also the gain under the
  run's own conditions, the mean of its blocks' noise-free ratios);
- the verdicts of the main pair (analysis.verdict.claim_verdict), blocks and phone time;
- the bias of the main pair's prefill gain at the stop, plain and bias-adjusted
  (sequential.bias_adjusted_mean);
- the phone time at 3 % noise with the gains as claimed for 30 to 110 s per invocation
  (the dry run's expected time interpolates it);
- config/config.yaml's two planned looks under a real quickstart run's noise;
- replays, block by block, of the committed real runs (the shipped archives' records and the
  committed host bench.csv files): the block the rule would have stopped at, and whether its
  verdicts equal the full run's.

Per-invocation noise levels are assumed, not measured: no phone was reachable here. The phone
time is blocks x invocations per block x the phone's assumed seconds per invocation (the
device kind's, plus the config's cool-down). Writes results/sequential_stopping.{md,json}.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tarfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

from mnnrepro import sequential, stats  # noqa: E402
from mnnrepro.analysis.verdict import claim_verdict  # noqa: E402
from mnnrepro.config import check_schema, run_variants, with_schema_defaults  # noqa: E402
from mnnrepro.design import Design  # noqa: E402
from mnnrepro.devices.kinds import DEVICE_KINDS  # noqa: E402
from mnnrepro.engines.pairs import modes_of, modes_record  # noqa: E402
from mnnrepro.engines.registry import EngineRecord  # noqa: E402
from mnnrepro.intervals import run_intervals  # noqa: E402
from mnnrepro.plan.overview import last_affordable_look  # noqa: E402
from mnnrepro.plan.settings import design_spec  # noqa: E402
from mnnrepro.repetitions import Repetitions  # noqa: E402
from mnnrepro.runs import precision, stopping_rows  # noqa: E402
from mnnrepro.runs.schedule import interleaved  # noqa: E402
from mnnrepro.sections import Stats  # noqa: E402

FIXED_BLOCKS = 30  # the comparison: a fixed run judged with the t interval
BASE = {"prefill": 300.0, "decode": 12.0}  # tok/s of the baseline (magnitudes only)


def paper() -> dict:
    return yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())


def scenarios(claims: dict, tol: float) -> list[dict]:
    """(name, per-invocation noise, true gains of the claim pairs, disturbance). The last
    three have noise that does not cancel in the ratio: the treatment's own slow wander, its
    greater sensitivity to heat, its throttling; their truth is the gain before it."""
    at = dict(claims)
    shifted = {
        "at the claim": at,
        "at the band's lower edge": {p: c - tol for p, c in at.items()},
        "at the band's upper edge": {p: c + tol for p, c in at.items()},
        "just inside the band": {p: c - 0.7 * tol for p, c in at.items()},
        "just outside the band": {p: c - 1.3 * tol for p, c in at.items()},
        "a tolerance outside the band": {p: c - 2 * tol for p, c in at.items()},
        "zero gain": {p: 0.0 for p in at},
    }
    out = [
        {"name": f"3 % noise, gain {where}", "noise": 0.03, "gains": gains}
        for where, gains in shifted.items()
    ]
    out += [
        {"name": f"{cv:.0%} noise, gain at the claim", "noise": cv, "gains": at}
        for cv in (0.02, 0.05, 0.10)
    ]
    out += [
        {"name": "3 % heavy-tailed noise (t, 3 df)", "noise": 0.03, "gains": at, "tails": 3},
        {
            "name": "3 % noise, shared slow drift (-20 % over the run)",
            "noise": 0.03,
            "gains": at,
            "drift": -0.2,
        },
        {
            "name": "3 % noise, shared thermal step-down (-25 %) halfway",
            "noise": 0.03,
            "gains": at,
            "step": -0.25,
        },
        {
            "name": "3 % noise, one outlier invocation (x0.3)",
            "noise": 0.03,
            "gains": at,
            "outlier": 0.3,
        },
        # noise that does not cancel in the ratio
        {
            "name": "3 % noise, each build its own AR(1) wander (rho 0.7 per block)",
            "noise": 0.03,
            "gains": at,
            "ar1": 0.7,
            "cancels": False,
        },
        {
            "name": "3 % noise, each build its own AR(1) wander (rho 0.34 per block: 0.7 per "
            "invocation)",
            "noise": 0.03,
            "gains": at,
            "ar1": 0.7**3,
            "cancels": False,
        },
        {
            "name": "3 % noise, heat: -10 % over the run, the treatment 1.6x as sensitive",
            "noise": 0.03,
            "gains": at,
            "thermal": (-0.10, 1.6),
            "cancels": False,
        },
        {
            "name": "3 % noise, the treatment alone throttled (-5 %) from a third of the run",
            "noise": 0.03,
            "gains": at,
            "throttle": (-0.05, 1 / 3),
            "cancels": False,
        },
    ]
    return out


def variant_gains(config: dict, gains: dict) -> dict[str, dict[str, float]]:
    """True speedup of each run variant over the baseline, per phase: the claim pairs'
    treatments gain `gains`, every other variant (baselines, the A/A twin) none."""
    return {
        v: {p: (1 + gains[p]) if v in treatments_of(config) else 1.0 for p in BASE}
        for v in run_variants(config)
    }


def treatments_of(config: dict) -> set[str]:
    comparison = config["comparison"]
    return {comparison["treatment"], *(p["treatment"] for p in comparison.get("also", []))}


def sd_of(noise, phase: str) -> float:
    """Per-invocation noise (SD of log tok/s): one for both phases, or one per phase."""
    return noise[phase] if isinstance(noise, dict) else noise


def invocation_noise(scenario: dict, variants, phases, blocks: int, rng) -> dict:
    """(variant, phase) -> each block's log noise: Gaussian, or Student t with the same SD, or
    each variant's own stationary AR(1) over its blocks (`ar1`: rho per block)."""
    out = {}
    for v in variants:
        for phase in phases:
            sd = sd_of(scenario["noise"], phase)
            if scenario.get("tails"):
                df = scenario["tails"]
                out[(v, phase)] = rng.standard_t(df, blocks) * sd / np.sqrt(df / (df - 2))
            elif scenario.get("ar1"):
                rho, e = scenario["ar1"], rng.normal(0, sd, blocks)
                for b in range(1, blocks):
                    e[b] = rho * e[b - 1] + np.sqrt(1 - rho**2) * e[b]
                out[(v, phase)] = e
            else:
                out[(v, phase)] = rng.normal(0, sd, blocks)
    return out


def level_at(scenario: dict, t: float, treated: bool) -> float:
    """The disturbances' factor on tok/s at time t (0..1 of the longest run): shared drift and
    step (both builds alike), heat to which the treatment is more sensitive, the treatment's
    own throttling."""
    level = (1 + scenario.get("drift", 0.0) * t) * (1 + scenario.get("step", 0.0) * (t >= 0.5))
    if "thermal" in scenario:
        drift, sensitivity = scenario["thermal"]
        level *= (1 + drift * t) ** (sensitivity if treated else 1.0)
    if "throttle" in scenario and treated:
        factor, start = scenario["throttle"]
        level *= 1 + factor * (t >= start)
    return level


def simulate(config: dict, scenario: dict, blocks: int, rng) -> list[dict]:
    """Raw records of `blocks` blocks, invocations simulated in the schedule's order (tok/s =
    base x gain x block factor x disturbances x noise, an outlier where asked)."""
    variants = sorted(run_variants(config))
    truth = variant_gains(config, scenario["gains"])
    treated = treatments_of(config)
    plan = interleaved(variants, blocks)
    total = len(plan)
    outlier_at = rng.integers(total) if scenario.get("outlier") else -1
    # shared by a block's invocations
    block_factor = np.exp(rng.normal(0, scenario.get("block_sd", 0.02), blocks))
    noise = invocation_noise(scenario, variants, BASE, blocks, rng)
    records = []
    for inv in plan:
        level = level_at(scenario, inv.run_order / total, inv.variant in treated)
        spike = scenario["outlier"] if inv.run_order == outlier_at else 1
        results = [
            {
                "phase": phase,
                "tps": base
                * truth[inv.variant][phase]
                * block_factor[inv.block]
                * level
                * np.exp(noise[(inv.variant, phase)][inv.block])
                * spike,
            }
            for phase, base in BASE.items()
        ]
        records.append(
            {
                "status": "ok",
                "variant": inv.variant,
                "invocation": {"block": inv.block},
                "results": results,
            }
        )
    return records


def expected_log_ratios(config: dict, scenario: dict, blocks: int, rows) -> dict:
    """Row name -> each block's expected log ratio: the scenario's disturbances without its
    noise (where the noise does not cancel in the ratio, the gain drifts over the run)."""
    quiet = {"name": scenario["name"], "gains": scenario["gains"], "noise": 0.0, "block_sd": 0.0}
    quiet.update(
        {k: scenario[k] for k in ("drift", "step", "thermal", "throttle") if k in scenario}
    )
    clean = simulate(config, quiet, blocks, np.random.default_rng(0))
    return {n: stopping_rows.block_log_ratios(clean, n) for n in rows}


def true_ratios(config: dict, rows: dict, gains: dict) -> dict[str, float]:
    truth = variant_gains(config, gains)
    out = {}
    for name in rows:
        b, t, what = stopping_rows.row_parts(name)
        if what == stopping_rows.MECHANISM:
            out[name] = (truth[t]["prefill"] / truth[b]["prefill"]) / (
                truth[t]["decode"] / truth[b]["decode"]
            )
        else:
            out[name] = truth[t][what] / truth[b][what]
    return out


def thresholds_on(config: dict, engines: dict, facts: dict) -> dict:
    """The judged rows' thresholds on a device with these facts, by the pairs' modes there as
    the workflow decides them (engines.pairs.modes_record)."""
    full = copy.deepcopy(config)
    check_schema(full, fill_defaults=True)
    design = Design.of(design_spec(full, ""))
    return precision.verdict_thresholds(design, modes_of(modes_record(design, engines, facts)))


def workflow_rule(repetitions: dict, **stats_given) -> precision.StoppingRule:
    """The workflow's stopping rule for these repetitions, on the interval it judges them on
    (intervals.run_intervals: the `stats` section's defaults, 95 %, with stats_given)."""
    section = Stats.of(with_schema_defaults(stats_given, "properties", "stats"))
    return precision.StoppingRule.of(repetitions, run_intervals(section, repetitions))


def rules_of(repetitions: dict) -> dict[str, precision.StoppingRule]:
    """The workflow's rule and what it is compared with, on the same looks and budget: the
    same boundary assuming independent blocks, the anytime-valid interval (the boundary this
    workflow used before), and the plain Student t (what optional stopping costs it)."""
    rule = workflow_rule(repetitions)

    def kind(interval):
        return lambda logs, widen=False: stats.log_ratio_interval(logs, 0.95, interval)

    return {
        "workflow": rule,
        "independent": workflow_rule(repetitions, dependence="assume-independent"),
        "anytime": replace(rule, interval=kind("anytime"), check_dependence=False),
        "plain_t": replace(rule, interval=kind("t"), check_dependence=False),
    }


def run_once(records, rows, rule, per_block_s: float) -> dict:
    """One simulated run's records through one stopping rule: where it stops, every row's
    final interval, and each row's mean log ratio at the stop."""
    ratios_all = {n: stopping_rows.block_log_ratios(records, n) for n in rows}
    stop = None
    for blocks in rule.looks:
        ratios = {n: r[:blocks] for n, r in ratios_all.items()}
        stop = precision.verdict_stop(ratios, rows, rule, blocks, blocks * per_block_s)
        if stop is not None:
            break
    means = {n: float(r[: stop["blocks"]].mean()) for n, r in ratios_all.items()}
    return {"blocks": stop["blocks"], "rows": stop["rows"], "means": means}


def fixed_run(records, rows) -> dict:
    """The same data judged at a fixed FIXED_BLOCKS blocks on the Student t interval."""
    out = {}
    for name in rows:
        low, high = stats.t_interval(
            stopping_rows.block_log_ratios(records, name)[:FIXED_BLOCKS], 0.95
        )
        out[name] = (float(low), float(high))
    return out


def verdict_of(low, high, claim, tol) -> str:
    if low is None:
        return "inconclusive"
    return claim_verdict(low - 1, high - 1, claim, tol)


def main_verdicts(intervals: dict, config: dict) -> tuple[str, str]:
    """The main pair's verdicts in prefill and decode, from each row's (low, high)."""
    comparison = config["comparison"]
    pair, claims = (comparison["baseline"], comparison["treatment"]), comparison["claims"]
    return tuple(
        verdict_of(*intervals[stopping_rows.row_name(*pair, p)], claims[p], comparison["tolerance"])
        for p in ("prefill", "decode")
    )


def stop_intervals(one: dict) -> dict:
    """Row name -> (low, high) where a run through a rule stopped."""
    return {name: (state["low"], state["high"]) for name, state in one["rows"].items()}


def evaluate(config, rows, repetitions, scenario, runs, seed, per_block_s) -> dict:
    """Every rule of rules_of on the same simulated runs of one scenario."""
    comparison = config["comparison"]
    prefill = stopping_rows.row_name(comparison["baseline"], comparison["treatment"], "prefill")
    truth = true_ratios(config, rows, scenario["gains"])
    rules = rules_of(repetitions)
    rng = np.random.default_rng(seed)
    tally = {k: {"covered": dict.fromkeys(rows, 0), "blocks": [], "verdicts": []} for k in rules}
    tally["fixed"] = {"covered": dict.fromkeys(rows, 0), "blocks": [], "verdicts": []}
    run_gain_covered = dict.fromkeys(rows, 0)  # the workflow's rule, of the run's own gain
    bias = {"plain": [], "adjusted": []}
    longest = max(repetitions["max"], FIXED_BLOCKS)
    expected = expected_log_ratios(config, scenario, longest, rows)
    for i in range(runs):
        records = simulate(config, scenario, longest, rng)
        for key, rule in rules.items():
            one = run_once(records, rows, rule, per_block_s)
            found = tally[key]
            found["blocks"].append(one["blocks"])
            for name, state in one["rows"].items():
                low, high = state["low"], state["high"]
                found["covered"][name] += low is None or low <= truth[name] <= high
                if key == "workflow":
                    run_gain = np.exp(expected[name][: one["blocks"]].mean())
                    run_gain_covered[name] += low is None or low <= run_gain <= high
            found["verdicts"].append(main_verdicts(stop_intervals(one), config))
            if key == "workflow" and i < BIAS_RUNS:
                bias_of(one, rows, rule, records, prefill, truth, bias)
        fixed = fixed_run(records, rows)
        for name, (low, high) in fixed.items():
            tally["fixed"]["covered"][name] += low <= truth[name] <= high
        tally["fixed"]["verdicts"].append(main_verdicts(fixed, config))
        tally["fixed"]["blocks"].append(FIXED_BLOCKS)
    out = {
        "scenario": scenario["name"],
        "runs": runs,
        "noise": scenario["noise"],
        "true_gains": scenario["gains"],
        "noise_cancels_in_the_ratio": scenario.get("cancels", True),
    }
    for key, found in tally.items():
        blocks = np.array(found["blocks"])
        out[key] = {
            "coverage": round(min(found["covered"].values()) / runs, 4),
            "coverage_per_row": {n: round(c / runs, 4) for n, c in found["covered"].items()},
            "mean_blocks": round(float(blocks.mean()), 2),
            "p95_blocks": float(np.percentile(blocks, 95)),
            "phone_s_mean": round(float(blocks.mean()) * per_block_s),
            "verdict_shares": shares(found["verdicts"]),
        }
    out["workflow"]["coverage_of_the_run_gain"] = round(min(run_gain_covered.values()) / runs, 4)
    out["bias_at_the_stop"] = {
        k: round(float(np.mean(v)), 4) if v else None for k, v in bias.items()
    }
    return out


BIAS_RUNS = 300  # runs per scenario whose bias-adjusted estimate is computed (it simulates)


def bias_of(one, rows, rule, records, name, truth, bias) -> None:
    """The main pair's prefill row at the stop: the plain mean log ratio and the bias-adjusted
    one (the summary's, sequential.bias_adjusted_mean, never before the other rows settled), each
    minus the truth, in log."""
    logs = stopping_rows.block_log_ratios(records, name)[: one["blocks"]]
    level = sequential.sequential_t_level(rule.looks, 0.95)
    adjusted = precision.bias_adjusted_log_gain(
        logs, name, rule.looks, level, rows[name], one["rows"]
    )
    bias["plain"].append(float(logs.mean()) - np.log(truth[name]))
    bias["adjusted"].append(adjusted - np.log(truth[name]))


def shares(verdicts: list[tuple[str, str]]) -> dict:
    """Per phase of the main pair, and both: the share of each verdict."""
    out = {}
    for i, phase in enumerate(("prefill", "decode")):
        names = [v[i] for v in verdicts]
        out[phase] = {n: round(names.count(n) / len(names), 4) for n in sorted(set(names))}
    both = [v[0] == v[1] == "reproduced" for v in verdicts]
    out["both reproduced"] = round(sum(both) / len(both), 4)
    return out


def phone_times(config, rows, repetitions, runs, seed, invocations_per_block) -> list[dict]:
    """The paper's rule at 3 % noise with the gains as claimed, for invocations of 30 to 110 s:
    the phone time of the benchmark (mean, 95th percentile, most), its blocks, and how often
    both phases are reproduced, under the config's budget."""
    claims = config["comparison"]["claims"]
    scenario = {"name": "at the claim", "noise": 0.03, "gains": claims}
    rule = rules_of(repetitions)["workflow"]
    out = []
    for seconds in INVOCATION_SECONDS:
        per_block = seconds * invocations_per_block
        if rule.budget_s is not None and rule.looks[0] * per_block > rule.budget_s:
            out.append({"invocation_s": seconds, "refused": True, "phone_s_most": per_block})
            print(f"phone time at {seconds} s an invocation: the budget affords no look")
            continue
        rng = np.random.default_rng(seed)
        blocks, both = [], 0
        for _ in range(runs):
            records = simulate(config, scenario, repetitions["max"], rng)
            one = run_once(records, rows, rule, per_block)
            blocks.append(one["blocks"])
            both += main_verdicts(stop_intervals(one), config) == ("reproduced", "reproduced")
        blocks = np.array(blocks)
        out.append(
            {
                "invocation_s": seconds,
                "mean_blocks": round(float(blocks.mean()), 2),
                "phone_s_mean": round(float(blocks.mean()) * per_block),
                "phone_s_p95": round(float(np.percentile(blocks, 95)) * per_block),
                "phone_s_most": round(float(blocks.max()) * per_block),
                "both_reproduced": round(both / runs, 4),
            }
        )
        print(f"phone time at {seconds} s an invocation: {out[-1]}", flush=True)
    return out


INVOCATION_SECONDS = (30, 42, 50, 72, 90, 110)


QUICKSTART_RUN = ROOT / "benchmarks" / "results" / "ci_halfwidth-bench.csv"  # a real quickstart


def measured_run(path: Path) -> tuple[dict[str, float], dict[str, float]]:
    """A real run's per-invocation noise and gains, per phase: the SD of its per-block log
    speedups over sqrt(2) (each is the difference of two invocations' log tok/s), and their
    geometric mean - 1."""
    import pandas as pd

    table = pd.read_csv(path)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    pair = f"{config['comparison']['baseline']}/{config['comparison']['treatment']}"
    records = precision.records_of_table(table)
    logs = {p: stopping_rows.block_log_ratios(records, f"{pair} {p}") for p in BASE}
    noise = {p: round(float(r.std(ddof=1) / np.sqrt(2)), 4) for p, r in logs.items()}
    gains = {p: round(float(np.exp(r.mean())) - 1, 4) for p, r in logs.items()}
    return noise, gains


def quickstart_rule(runs: int, seed: int) -> dict:
    """config/config.yaml's rule (two planned looks, Bonferroni t) beside the same bounds on
    the anytime interval at every block, under the noise of a real quickstart run
    (QUICKSTART_RUN) and twice it: the rows' coverage at the stop, how often the mechanism
    check is `shown` (its interval above 1) and the blocks used; with equal gains in both
    phases (no mechanism), `shown` is an error."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    rule = config["bench"]["repetitions"]
    every_block = {k: v for k, v in rule.items() if k != "looks"}
    engines = {e: EngineRecord.of({"engine": e, "kind": "prebuilt"}) for e in config["engines"]}
    rows = thresholds_on(config, engines, {"device": "host", "sme2": False})
    mechanism = next(n for n in rows if stopping_rows.row_parts(n)[2] == stopping_rows.MECHANISM)
    noise, measured = measured_run(QUICKSTART_RUN)
    reference = config["comparison"]["reference_gains"]
    equal = {p: reference["decode"] for p in BASE}
    scenarios = [
        ("the measured noise and gains", noise, measured),
        ("the measured noise, the reference gains", noise, reference),
        (
            "twice the measured noise, the reference gains",
            {p: 2 * v for p, v in noise.items()},
            reference,
        ),
        ("the measured noise, equal gains (no mechanism)", noise, equal),
    ]
    planned = workflow_rule(rule)
    comparisons = (
        ("2 planned looks, calibrated", planned),
        (
            "2 planned looks, Bonferroni (before)",
            replace(
                planned,
                interval=lambda logs, widen=False: stats.log_ratio_interval(logs, 0.975, "t"),
                check_dependence=False,
            ),
        ),
        (
            "anytime, every block",
            replace(
                workflow_rule(every_block),
                interval=lambda logs, widen=False: stats.log_ratio_interval(logs, 0.95, "anytime"),
                check_dependence=False,
            ),
        ),
    )
    out = []
    for i, (name, sd, gains) in enumerate(scenarios):
        scenario = {"name": name, "noise": sd, "gains": gains}
        truth = true_ratios(config, rows, gains)
        for label, stopping in comparisons:
            repetitions = stopping.repetitions
            rng = np.random.default_rng(seed + i)
            covered = {n: 0 for n in rows}
            shown, blocks = 0, []
            for _ in range(runs):
                records = simulate(config, scenario, repetitions["max"], rng)
                one = run_once(records, rows, stopping, 0.0)
                blocks.append(one["blocks"])
                for n, state in one["rows"].items():
                    low, high = state["low"], state["high"]
                    covered[n] += low is None or low <= truth[n] <= high
                low = one["rows"][mechanism]["low"]
                shown += low is not None and low > 1
            out.append(
                {
                    "scenario": name,
                    "rule": label,
                    "repetitions": repetitions,
                    "noise": sd,
                    "true_gains": gains,
                    "runs": runs,
                    "coverage": round(min(covered.values()) / runs, 4),
                    "mechanism_shown": round(shown / runs, 4),
                    "mean_blocks": round(float(np.mean(blocks)), 2),
                    "p95_blocks": float(np.percentile(blocks, 95)),
                }
            )
            print(f"quickstart, {name}, {label}: {out[-1]['coverage']}", flush=True)
    return {
        "measured_noise": noise,
        "measured_gains": measured,
        "source": str(QUICKSTART_RUN.relative_to(ROOT)),
        "scenarios": out,
    }


def region(low, high, thresholds) -> str:
    """Where a row's interval lies among its verdict's thresholds: its verdict, in a form every
    kind of row shares (claim band, equality band, A/A margin, the mechanism check's 1)."""
    if thresholds is None:
        return "no claim"
    if low is None or any(low < x < high for x in thresholds):
        return "unsettled"
    return f"above {sum(x <= low for x in thresholds)} of {len(thresholds)} thresholds"


def configs_of(experiment: str):
    """(path, config) of each config in config/ that runs this experiment."""
    for path in sorted((ROOT / "config").glob("*.yaml")):
        config = yaml.safe_load(path.read_text()) or {}
        if config.get("experiment") == experiment:
            yield path, config


def replay_rule(experiment: str) -> tuple[dict, str]:
    """The rule a replay applies: that of the config in config/ that runs the same experiment
    where it stops on the verdict, else config/paper.yaml's."""
    for path, config in configs_of(experiment):
        repetitions = (config.get("bench") or {}).get("repetitions")
        if Repetitions.of(repetitions).stops_on_verdict:
            return repetitions, str(path.relative_to(ROOT))
    return paper()["bench"]["repetitions"], "config/paper.yaml"


def replay(source: str, config: dict, records: list[dict], facts: dict, engines: dict) -> dict:
    """A committed real run's records, block by block, through the stopping rule: where it
    would have stopped and whether each row's verdict there (on the rule's interval) equals
    the one the full run gave (all its blocks, fixed in advance: Student t)."""
    rule, rule_from = replay_rule(config["experiment"])
    rows = thresholds_on(config, engines, facts)
    ratios = {n: stopping_rows.block_log_ratios(records, n) for n in rows}
    total = min(r.size for r in ratios.values())
    out = {"source": source, "rule": rule, "rule_from": rule_from, "blocks_recorded": total}
    stop = None
    for blocks in range(rule["min"], total + 1):
        stop = precision.verdict_stop(
            {n: r[:blocks] for n, r in ratios.items()},
            rows,
            workflow_rule({**rule, "max": min(rule["max"], total)}),
            blocks,
            0.0,
        )
        if stop:
            break
    if stop is None:
        return {**out, "stopped_at": None, "reason": "fewer blocks than the rule's min"}
    regions = {}
    for name, state in stop["rows"].items():  # the full run's own: fixed n, Student t
        full = [float(v) for v in stats.t_interval(ratios[name][:total], 0.95)]
        regions[name] = {
            "at_stop": region(state["low"], state["high"], rows[name]),
            "full_run": region(*full, rows[name]),
        }
    judged = {n: r for n, r in regions.items() if r["full_run"] != "no claim"}
    return {
        **out,
        "stopped_at": stop["blocks"],
        "reason": stop["reason"],
        "rows": regions,
        "verdicts_equal_the_full_run": all(r["at_stop"] == r["full_run"] for r in judged.values()),
    }


def replay_archive(path: Path) -> dict:
    """The shipped archive's real records (its own config's pairs; the rows' thresholds from
    its engines and device facts)."""
    with tarfile.open(path) as tar:
        names = tar.getnames()
        config = yaml.safe_load(tar.extractfile("config.resolved.yaml").read())
        exp = config["experiment"]

        def load(name):
            return json.loads(tar.extractfile(name).read())

        engines = {}
        for n in names:
            if n.startswith("results/engines/") and n.endswith(".json"):
                rec = load(n)
                engines[rec["engine"]] = rec
        facts = {
            load(n)["device"]: load(n) for n in names if n.startswith(f"results/{exp}/devices/")
        }
        records = [load(n) for n in names if f"results/{exp}/raw/" in n and "superseded" not in n]
    source = str(path.relative_to(ROOT))
    return replay(source, config, records, facts[sorted(facts)[0]], engines)


def replay_bench_table(path: Path) -> dict:
    """A committed bench.csv of a host run (one row per invocation and phase): its experiment's
    config in config/, this machine's kind of facts (no SME2), its engines prebuilt."""
    import pandas as pd

    table = pd.read_csv(path)  # the kept invocations (`superseded` counts what each replaced)
    (experiment,) = table["experiment"].unique()
    _, config = next(configs_of(experiment))
    records = precision.records_of_table(table)
    (device,) = table["device"].unique()
    engines = {e: EngineRecord.of({"engine": e, "kind": "prebuilt"}) for e in config["engines"]}
    source = str(path.relative_to(ROOT))
    return replay(source, config, records, {"device": device, "sme2": False}, engines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    started = time.monotonic()
    config = paper()
    repetitions = config["bench"]["repetitions"]
    stops = Repetitions.of(repetitions).stops_on_verdict
    assert stops, "config/paper.yaml does not stop on its verdict"
    cooldown = config["bench"].get("cooldown_s", 0)
    per_invocation_s = DEVICE_KINDS["adb"].assumed_invocation_s + cooldown
    per_block = len(run_variants(config))
    engines = {
        e: EngineRecord.of({"engine": e, "kind": "prebuilt"}) for e in config["engines"]
    }  # claim mode
    rows = thresholds_on(config, engines, {"device": "phone", "sme2": True})
    results = []
    comparison = config["comparison"]
    for i, s in enumerate(scenarios(comparison["claims"], comparison["tolerance"])):
        found = evaluate(
            config, rows, repetitions, s, args.runs, args.seed + i, per_invocation_s * per_block
        )
        results.append(found)
        print(
            f"{s['name']}: " + ", ".join(f"{k} {found[k]['coverage']}" for k in RULE_NAMES),
            flush=True,
        )
    times = phone_times(config, rows, repetitions, args.runs // 4, args.seed + 50, per_block)
    quickstart = quickstart_rule(args.runs, args.seed + 100)
    committed = ROOT / "benchmarks" / "results"
    replays = [replay_archive(p) for p in sorted(committed.glob("*.tar.gz"))]
    replays += [replay_bench_table(p) for p in sorted(committed.glob("*bench.csv"))]
    at_claim = next(r for r in results if r["scenario"] == "3 % noise, gain at the claim")
    result = {
        "runs": args.runs,
        "seed": args.seed,
        "repetitions": repetitions,
        "invocations_per_block": per_block,
        "per_invocation_s": per_invocation_s,
        "looks": list(Repetitions.of(repetitions).stopping_looks()),
        "look_level": sequential.sequential_t_level(
            Repetitions.of(repetitions).stopping_looks(), 0.95
        ),
        "scenarios": results,
        "phone_times": times,
        "replays": replays,
        "quickstart_rule": quickstart,
        "paper_phone_s": {
            "expected": at_claim["workflow"]["phone_s_mean"],
            "worst": worst_phone_s(repetitions, per_block * per_invocation_s),
            "assumed": "3 % noise per invocation, the gains as claimed, "
            f"{per_invocation_s:g} s per invocation",
            "anytime_before": at_claim["anytime"]["phone_s_mean"],
        },
        "seconds": round(time.monotonic() - started, 1),
    }
    write_results("sequential_stopping", result, markdown(result))
    print("\n".join(markdown(result)))
    return 0


RULE_NAMES = {
    "workflow": "the workflow's rule",
    "independent": "assuming independence",
    "anytime": "anytime interval",
    "plain_t": "plain t",
    "fixed": "fixed 30 blocks, t",
}


def worst_phone_s(repetitions: dict, per_block_s: float) -> int:
    """The most benchmark time the rule can take (the dry run's own figure)."""
    return round(last_affordable_look(Repetitions.of(repetitions), per_block_s) * per_block_s)


def markdown(result: dict) -> list[str]:
    reps = result["repetitions"]
    level = result["look_level"]
    looks = result["looks"]
    lines = [
        "# Stopping on the verdict (simulation)",
        "",
        "`python benchmarks/sequential_stopping.py "
        f"--runs {result['runs']} --seed {result['seed']}` "
        f"({result['seconds']} s). config/paper.yaml's rule (`{json.dumps(reps)}`), "
        f"{result['invocations_per_block']} invocations per block, through the project's own "
        f"stopping code (runs/precision.verdict_stop): looks at blocks {looks[0]} to "
        f"{looks[-1]}, each on the Student t interval at {level:.2%} "
        "(sequential.sequential_t_level: the level calibrated for those looks), widened where the "
        "blocks show serial dependence. **The noise levels are assumed, not measured: no phone "
        "was reachable here.** Phone time: blocks x invocations per block x "
        f"{result['per_invocation_s']:g} s (the phone's assumed seconds per invocation and the "
        "config's cool-down); the gate and profiling invocations come on top (the dry run adds "
        "them).",
        "",
        "Coverage at the stop is, per judged row, the share of runs whose final interval holds "
        "the true speedup (where the noise does not cancel in the ratio, the gain before the "
        "disturbance); each column gives the lowest row's. The same simulated runs go through "
        "each rule: the workflow's; the same boundary never widened for dependence; the "
        "anytime-valid interval at every look (this workflow's boundary before); the plain "
        "Student t at every look (what optional stopping costs it); and a fixed 30 blocks on "
        "the t interval.",
        "",
        "| scenario | noise cancels in the ratio | coverage: the workflow's rule "
        "| the workflow's rule, of the run's own gain "
        "| assuming independence | anytime | plain t | fixed 30 | mean / p95 blocks "
        "| phone time (mean) | anytime: phone time | main pair: reproduced (prefill / decode "
        "/ both) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in result["scenarios"]:
        w = r["workflow"]
        v = w["verdict_shares"]
        lines.append(
            f"| {r['scenario']} | {'yes' if r['noise_cancels_in_the_ratio'] else '**no**'} | "
            f"{w['coverage']:.3f} | {w['coverage_of_the_run_gain']:.3f} | "
            f"{r['independent']['coverage']:.3f} | "
            f"{r['anytime']['coverage']:.3f} | {r['plain_t']['coverage']:.3f} | "
            f"{r['fixed']['coverage']:.3f} | {w['mean_blocks']:.1f} / {w['p95_blocks']:.0f} | "
            f"{w['phone_s_mean'] / 60:.0f} min | {r['anytime']['phone_s_mean'] / 60:.0f} min | "
            f"{v['prefill'].get('reproduced', 0):.1%} / {v['decode'].get('reproduced', 0):.1%} "
            f"/ {v['both reproduced']:.1%} |"
        )
    lowest = min(result["scenarios"], key=lambda r: r["workflow"]["coverage"])
    p = result["paper_phone_s"]
    lines += [
        "",
        f"The workflow's rule covers at least {lowest['workflow']['coverage']:.3f} "
        f"(`{lowest['scenario']}`).",
        "",
        "## The gain at the stop",
        "",
        "Stopping when an interval clears a threshold makes the mean at the stop a biased "
        "estimate of the gain. Mean error of the main pair's prefill log gain at the stop "
        f"over the first {BIAS_RUNS} runs of each scenario, plain and bias-adjusted "
        "(summary.csv `gain_bias_adjusted`: sequential.bias_adjusted_mean, Whitehead's "
        "estimate for the row's own stopping):",
        "",
        "| scenario | plain mean: bias (log) | bias-adjusted: bias (log) |",
        "|---|---:|---:|",
        *(
            f"| {r['scenario']} | {r['bias_at_the_stop']['plain']:+.4f} | "
            f"{r['bias_at_the_stop']['adjusted']:+.4f} |"
            for r in result["scenarios"]
        ),
        "",
        "## Phone time",
        "",
        f"config/paper.yaml's phone time for the benchmark: expected {p['expected'] / 60:.0f} "
        f"min with {p['assumed']}, worst case {p['worst'] / 60:.0f} min (the last look its "
        f"`budget_s` affords); the anytime interval at the same looks took "
        f"{p['anytime_before'] / 60:.0f} min. For other invocation times "
        f"({result['runs'] // 4} runs each, 3 % noise, the gains as claimed, the same budget):",
        "",
        "| seconds per invocation | mean blocks | phone time: mean / p95 / most "
        "| both phases reproduced |",
        "|---:|---:|---|---:|",
        *(
            f"| {t['invocation_s']} | - | the budget affords no look: the run ends after its "
            f"first block ({t['phone_s_most'] / 60:.0f} min), asking for a larger budget | - |"
            if t.get("refused")
            else f"| {t['invocation_s']} | {t['mean_blocks']:.1f} | {t['phone_s_mean'] / 60:.0f} "
            f"/ {t['phone_s_p95'] / 60:.0f} / {t['phone_s_most'] / 60:.0f} min | "
            f"{t['both_reproduced']:.1%} |"
            for t in result["phone_times"]
        ),
        "",
    ]
    quick = result["quickstart_rule"]
    lines += [
        "## The quickstart's rule",
        "",
        f"config/config.yaml's rule (`{json.dumps(quick['scenarios'][0]['repetitions'])}`: "
        "two planned looks, each on the t interval at the level calibrated for them) beside "
        "the same looks at Bonferroni's 97.5 % (this workflow's rule before) and the same "
        "bounds on the anytime interval at every block, "
        f"{result['runs']} simulated runs each, under the per-invocation noise measured in a real "
        f"quickstart run (`{quick['source']}`: "
        + ", ".join(f"{p} {v:.1%}" for p, v in quick["measured_noise"].items())
        + "; its gains "
        + ", ".join(f"{p} {v:+.1%}" for p, v in quick["measured_gains"].items())
        + ") and twice it. `shown`: the mechanism check's interval lies above 1; with equal gains "
        "in both phases that is an error, which each rule must keep at or below 2.5 %.",
        "",
        "| scenario | rule | coverage at the stop | mechanism `shown` | mean / p95 blocks |",
        "|---|---|---:|---:|---|",
        *(
            f"| {r['scenario']} | {r['rule']} | {r['coverage']:.3f} | {r['mechanism_shown']:.1%} | "
            f"{r['mean_blocks']:.1f} / {r['p95_blocks']:.0f} |"
            for r in quick["scenarios"]
        ),
        "",
        "## Replays of the committed real runs",
        "",
        "Each committed real run (the shipped archives, the committed host bench.csv files), "
        "block by block, through the rule of the config in config/ that runs its experiment "
        "where that stops on the verdict, else config/paper.yaml's (its `max` cut to the "
        "blocks recorded). A row's verdict is where its interval lies among its thresholds: "
        "at the stop the rule's own interval, for the full run the Student t interval over all "
        "its blocks (a number fixed in advance, as these runs were); rows without a claim have "
        "none and are not compared.",
        "",
        "| run | rule | blocks recorded | the rule stops at | why "
        "| verdicts equal the full run's | where they differ (at the stop / full run) |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for r in result["replays"]:
        differ = "; ".join(
            f"{name}: {v['at_stop']} / {v['full_run']}"
            for name, v in r.get("rows", {}).items()
            if v["at_stop"] != v["full_run"]
        )
        lines.append(
            f"| `{r['source']}` | {r['rule_from']} | {r['blocks_recorded']} | "
            f"{r['stopped_at']} | {r['reason']} | {r.get('verdicts_equal_the_full_run', '-')} | "
            f"{differ or '-'} |"
        )
    return lines


if __name__ == "__main__":
    sys.exit(main())
