"""Published SME2 figures held out against the prediction's method: each engine's counting run
through the workflow (config/predict-held-out.yaml: MNN 3.6.1's SME2 OFF and ON builds;
config/predict-held-out-llamacpp.yaml and, at 2 threads, -2-threads.yaml: llama.cpp with
KleidiAI, its SME kernels off and on), counted under QEMU on one layer of each figure's own
model, at its thread count and its 128-token prompt, then each figure of
benchmarks/held_out_figures.yaml predicted for its own model (config/cost_model.yaml's
`models`) from its engine's counts and scored: its log error, and its 80 % interval with the
model error estimated from the other figures alone (left out one at a time). It reports the
median |log error|, how many intervals hold their figure, their widths, and the
root-mean-square log error, from which config/cost_model.yaml's `model_error.log_sd` is set
(its source says from which figures).

Usage: python benchmarks/held_out.py --mnn /path/to/MNN [--kleidiai URL]
                                     [--llamacpp-kleidiai URL] [--workdir DIR] [--cores 2]

`--mnn` is a local checkout of MNN release 3.6.1; `--kleidiai` a mirror URL (e.g. file://) of
the pinned KleidiAI v1.16.0 tarball, `--llamacpp-kleidiai` of llama.cpp's pinned v1.24.0 (their
checksums still check them). A rerun in the same working directory measures only what is
missing. It writes benchmarks/results/held_out.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from predicted_gain import (  # noqa: E402
    counted_functions,
    counted_lines,
    counting_run_arguments,
    mnn_config,
    pinned_llvm_mca,
    predicted_run,
)
from provenance import write_results  # noqa: E402

from mnnrepro.analysis.cost_model import LEVEL, CostModel  # noqa: E402
from mnnrepro.analysis.instruction_prices import priced_run  # noqa: E402
from mnnrepro.analysis.prediction import (  # noqa: E402
    Target,
    error_interval,
    gain,
    predict_pair,
    unit_gains,
    weights,
)
from mnnrepro.analysis.token_work import for_prompt  # noqa: E402
from mnnrepro.engines.registry import kind_of_spec  # noqa: E402
from mnnrepro.models.shapes import SHAPES  # noqa: E402

# each counting run: (its engine, its config, its experiment); a figure is counted by the run
# its `counted.run` names (its engine's name by default)
RUNS = {
    "mnn": ("mnn", "config/predict-held-out.yaml", "predict-held-out"),
    "llama.cpp": (
        "llama.cpp",
        "config/predict-held-out-llamacpp.yaml",
        "predict-held-out-llamacpp",
    ),
    "llama.cpp-2-threads": (
        "llama.cpp",
        "config/predict-held-out-llamacpp-2-threads.yaml",
        "predict-held-out-llamacpp-2-threads",
    ),
}
ENGINES = sorted({engine for engine, _, _ in RUNS.values()})
FIGURES = ROOT / "benchmarks" / "held_out_figures.yaml"
COSTS = ROOT / "config" / "cost_model.yaml"


def counted_cases(runs: dict, data: dict) -> tuple[list[dict], list[dict]]:
    """(each figure counted with what predicts it, each figure not counted and why), from
    `runs`: a figure's engine -> (its run's config, its prediction.json, its validity checks).
    A figure is predicted for its own model: the counted layer's work scaled by the figure's
    model's weights, priced with that model's constants. A figure whose counted pair failed a
    validity check of the workflow (its SME2 kernels did not run, its answers differ) is not
    predicted: its counts are not of what the figure measured."""
    cases, missing = [], []
    for figure in data["figures"]:
        counted, run = figure.get("counted"), run_of(figure)
        if run not in runs:
            missing.append(
                {**figure, "why": f"its counting run `{run}` was not asked for (--runs)"}
            )
            continue
        config, document, checks = runs[run]
        found = [
            p
            for p in document["predictions"]
            if counted
            and (p["model"], p["baseline"], p["treatment"])
            == (counted["model"], counted["baseline"], counted["treatment"])
        ]
        failed = failed_checks(checks, counted) if found else []
        if not found or failed:
            why = figure.get("not_counted", "not counted")
            if failed:
                why = "its counted pair failed the workflow's validity checks: " + "; ".join(
                    f"{c['name']} ({c['evidence']})" for c in failed
                )
            missing.append({**figure, "why": why})
            continue
        (p,) = found
        made_for = document["bench"]["prompt_tokens"]
        generated = document["bench"]["generate_tokens"]
        model = CostModel.read(COSTS, document["core"], document["soc"], figure["model"])
        layer = SHAPES[config["models"][counted["model"]]["synthetic"]["shape"]]
        scale = weights(model.phone_shape) / weights(layer)
        base, treat = (
            for_prompt(p["mix_per_token"][side], made_for, data["prompt_tokens"])
            for side in ("baseline", "treatment")
        )
        target = Target.of(model, scale, data["prompt_tokens"], generated)
        gain = figure["with_sme2"] / figure["without_sme2"] - 1
        keys = (document["core"], document["soc"], figure["model"])
        priced = CostModel.read(COSTS, *keys, "per_instruction")  # its own constants and error
        case = {"figure": figure, "gain": gain, "p": p, "model": model, "target": target}
        case["priced_model"] = priced
        tokens = {"prefill": made_for, "decode": generated}
        cases.append(
            {**case, "mixes": (base, treat), "device": document["device"], "tokens": tokens}
        )
    return cases, missing


def run_of(figure: dict) -> str:
    """The counting run (RUNS' key) a figure is predicted from."""
    return (figure.get("counted") or {}).get("run", figure["engine"])


def failed_checks(checks: list[dict], counted: dict) -> list[dict]:
    """The validity checks of the counted model's pair (its baseline and treatment) that
    failed."""
    pair = [counted["baseline"], counted["treatment"]]
    ours = [c for c in checks if c["model"] == counted["model"] and c["pair"] == pair]
    return [c for c in ours if not c["passed"]]


def leave_one_out(cases: list[dict], phase: str) -> list[dict]:
    """Each case's prediction with the model error the other cases' log errors estimate (their
    root mean square; none without another case), so no figure widens its own interval."""
    errors = []
    for c in cases:  # the gain at the constants' values: no interval needed for the error
        model, threads = c["model"], tuple(c["p"]["threads"])
        point = gain(*c["mixes"], phase, model.values(), c["target"], model, threads)
        errors.append(math.log((1 + c["gain"]) / (1 + point)))
    rows = []
    for i, c in enumerate(cases):
        others = errors[:i] + errors[i + 1 :]
        sd = rms(others) if others else 0.0
        alone = dataclasses.replace(c["model"], model_error=sd)
        got = predict_pair(*c["mixes"], alone, c["target"], tuple(c["p"]["threads"]))[phase]
        rows.append(
            {
                **c["figure"],
                "published_gain": c["gain"],
                "predicted": {k: got[k] for k in ("gain", "low", "high", "tokens_per_s")},
                "log_error": errors[i],
                "model_error_log_sd": sd,
                "others": len(others),
                "inside": got["low"] <= c["gain"] <= got["high"],
                "width": (1 + got["high"]) / (1 + got["low"]),
            }
        )
    return rows


def per_instruction(cases: list[dict], priced: dict, prompt: int, phase: str) -> list[dict]:
    """Each case predicted again with its counts priced instruction by instruction (priced:
    engine -> (its run's profiles priced, analysis/instruction_prices.py; its waiting
    functions)), for the figure's prompt; the interval is the model error of the other
    figures' errors alone (no constant is ranged: the clock cancels in a prefill gain)."""
    rows = []
    for c in cases:
        table, waiting = priced[run_of(c["figure"])]
        sides, threads = (c["p"]["baseline"], c["p"]["treatment"]), tuple(c["p"]["threads"])
        where = (c["device"], c["p"]["model"])
        args = (c["tokens"], prompt, c["priced_model"], c["target"], threads, waiting)
        got = unit_gains(table, where, sides, *args)[phase]
        ours = table[(table["model"] == c["p"]["model"]) & table["variant"].isin(sides)]
        unpriced = float(ours["unpriced"].sum() / ours["instructions"].sum())
        rows.append(
            {
                **{k: c["figure"][k] for k in ("engine", "model", "threads")},
                "published_gain": c["gain"],
                "predicted": {"gain": got, "unpriced_share": unpriced},
                "log_error": math.log((1 + c["gain"]) / (1 + got)),
            }
        )
    return with_others_error(rows)


def with_others_error(rows: list[dict]) -> list[dict]:
    """Each priced figure (its published and predicted gain, its log error) with the interval
    the other figures' log errors give it (their root mean square, error_interval), whether
    that holds the figure and its high / low: no figure widens its own interval."""
    errors = [r["log_error"] for r in rows]
    scored = []
    for i, r in enumerate(rows):
        others = errors[:i] + errors[i + 1 :]
        sd = rms(others) if others else 0.0
        low, high = error_interval(r["predicted"]["gain"], sd)
        scored.append(
            {
                **r,
                "predicted": {**r["predicted"], "low": low, "high": high},
                "model_error_log_sd": sd,
                "others": len(others),
                "inside": low <= r["published_gain"] <= high,
                "width": (1 + high) / (1 + low),
            }
        )
    return scored


def rms(values: list[float]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values))


def scores(rows: list[dict]) -> dict:
    """What the held-out figures say of the method: median |log error|, coverage, widths and
    the root-mean-square log error (the cost model's model error)."""
    if not rows:
        return {"predicted": 0}
    return {
        "predicted": len(rows),
        "median_abs_log_error": statistics.median(abs(r["log_error"]) for r in rows),
        "inside": sum(r["inside"] for r in rows),
        "median_width": statistics.median(r["width"] for r in rows),
        "rms_log_error": rms([r["log_error"] for r in rows]),
    }


def markdown(rows, missing, summary, data, stated, seconds) -> list[str]:
    ran = "; ".join(f"{RUNS[run][1]} {s} s" for run, s in seconds.items())
    lines = [
        "# Published SME2 figures held out against the prediction (benchmarks/held_out.py)",
        "",
        "Command: `python benchmarks/held_out.py --mnn <MNN 3.6.1> --kleidiai <KleidiAI "
        "v1.16.0 tarball> --llamacpp-kleidiai <KleidiAI v1.24.0 tarball>` (each engine's "
        f"counting run through the workflow, this invocation: {ran}; with `--engines`, only "
        "those engines' runs and figures; a rerun measures only "
        "what is missing). Figures: "
        f"benchmarks/held_out_figures.yaml ({data['source']}), {data['prompt_tokens']}-token "
        f"{data['phase']}. Each is predicted from its engine's counts of one layer of its own "
        "model at its own thread count, for its own model's weights (config/cost_model.yaml).",
        "",
        f"| engine | model | threads | published off -> on | gain | predicted | log error | "
        f"{LEVEL:.0%} interval (model error of the others) | inside | high / low |",
        "|---|---|---:|---|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        got = r["predicted"]
        lines.append(
            f"| {r['engine']} | {r['model']} | {r['threads']} | "
            f"{r['without_sme2']} -> {r['with_sme2']} | "
            f"{r['published_gain']:+.0%} | {got['gain']:+.0%} | {r['log_error']:+.3f} | "
            f"[{got['low']:+.0%}, {got['high']:+.0%}] (log sd {r['model_error_log_sd']:.3f} "
            f"of {r['others']}) | {'yes' if r['inside'] else 'no'} | {r['width']:.2f} |"
        )
    lines += [
        f"| {m['engine']} | {m['model']} | {m['threads']} | "
        f"{m['without_sme2']} -> {m['with_sme2']} | "
        f"{m['with_sme2'] / m['without_sme2'] - 1:+.0%} | not predicted: {m['why']} |||||"
        for m in missing
    ]
    lines += ["", *summary_lines(summary, stated), ""]
    return lines


def summary_lines(summary: dict, stated: float) -> list[str]:
    if not summary["predicted"]:
        return ["No figure predicted."]
    n = summary["predicted"]
    return [
        f"- predicted: {n} of the figures; median |log error| "
        f"{summary['median_abs_log_error']:.3f}",
        f"- {LEVEL:.0%} intervals, each with the model error of the others alone: "
        f"{summary['inside']} of {n} hold their figure; median high / low "
        f"{summary['median_width']:.2f}",
        f"- root-mean-square log error: {summary['rms_log_error']:.3f} (config/cost_model.yaml's "
        f"`model_error.log_sd` when this run predicted: {stated:g})",
    ]


def per_instruction_lines(priced: dict, by_class: list[dict]) -> list[str]:
    lines = [
        "## Priced instruction by instruction",
        "",
        f"The same counts, each executed instruction priced by llvm-mca ({priced['llvm_mca']}, "
        "`-mcpu=c1-ultra`, streaming mode for the functions that run SME; "
        "analysis/instruction_prices.py): the busiest of the core's units, or its dispatch "
        "width, bounds the cycles. Interval: the other figures' root-mean-square log error "
        f"alone, at {LEVEL:.0%}.",
        "",
        "| engine | model | threads | gain | by class | per instruction | log error | interval "
        "| inside | not priced |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for r, c in zip(priced["figures"], by_class, strict=True):
        got = r["predicted"]
        lines.append(
            f"| {r['engine']} | {r['model']} | {r['threads']} | {r['published_gain']:+.0%} | "
            f"{c['predicted']['gain']:+.0%} | {got['gain']:+.0%} | {r['log_error']:+.3f} | "
            f"[{got['low']:+.0%}, {got['high']:+.0%}] | {'yes' if r['inside'] else 'no'} | "
            f"{got['unpriced_share']:.2%} |"
        )
    summary = priced["summary"]
    if summary["predicted"]:
        lines += ["", *summary_lines(summary, float("nan"))[:2]]
        lines += [f"- root-mean-square log error: {summary['rms_log_error']:.3f}", ""]
    return lines


def counting_runs(args: argparse.Namespace) -> tuple[dict, dict, list[dict]]:
    """Each counting run of the engines asked for: (run -> (its config, its prediction.json,
    its validity checks), run -> its seconds, where each run's counted instructions are, and
    its profiles priced instruction by instruction: {tables: run -> (priced rows, its waiting
    functions), llvm_mca: the version that priced them}); runs are RUNS' keys."""
    mirror = {"kleidiai": {"url": args.llamacpp_kleidiai}} if args.llamacpp_kleidiai else None
    tools = pinned_llvm_mca(args.workdir)
    runs, seconds, counted, priced = {}, {}, [], {}
    for name, (engine, config_file, experiment) in RUNS.items():
        if engine not in args.engines or (args.runs and name not in args.runs):
            continue
        mnn = mnn_config(args) if engine == "mnn" else None
        llamacpp = mirror if engine == "llama.cpp" else None
        run, document, _, kernels = predicted_run(
            args.workdir, [config_file], mnn, args.cores, experiment, llamacpp=llamacpp
        )
        config = yaml.safe_load((ROOT / config_file).read_text())
        runs[name], seconds[name] = (config, document, run["validity"]), run["seconds"]
        (waiting,) = {kind_of_spec(e).waiting_functions for e in config["engines"].values()}
        counted += counted_functions(kernels, document["device"], waiting)
        keys = (document["core"], document["soc"], document["model"])
        spec = CostModel.read(COSTS, *keys, "per_instruction").llvm_mca  # the core's options
        priced[name] = (priced_run(run["profiles"], tools, spec), waiting)
    return runs, seconds, counted, {"tables": priced, "llvm_mca": tools.version()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    counting_run_arguments(parser)
    parser.add_argument("--llamacpp-kleidiai", help="URL of the KleidiAI v1.24.0 tarball")
    parser.add_argument(
        "--engines", nargs="+", choices=ENGINES, default=ENGINES,
        help="only these engines' counting runs and figures (results: held_out-<engines>)",
    )  # fmt: skip
    parser.add_argument(
        "--runs", nargs="+", choices=list(RUNS),
        help="only these counting runs (default: every run of the engines); the figures of "
        "the others are listed as not predicted",
    )  # fmt: skip
    args = parser.parse_args(argv)
    runs, seconds, counted, priced = counting_runs(args)
    data = yaml.safe_load(FIGURES.read_text())
    data["figures"] = [f for f in data["figures"] if f["engine"] in args.engines]
    cases, missing = counted_cases(runs, data)
    rows = leave_one_out(cases, data["phase"])
    summary = scores(rows)
    units = per_instruction(cases, priced["tables"], data["prompt_tokens"], data["phase"])
    interval = next(iter(runs.values()))[1]["interval"]
    result = {
        "configs": [RUNS[name][1] for name in runs],
        "seconds": seconds,
        "figures": rows,
        "not_predicted": missing,
        "summary": summary,
        "interval": interval,
        "counted_functions": counted,
        "per_instruction": {
            "llvm_mca": priced["llvm_mca"],
            "figures": units,
            "summary": scores(units),
        },
    }
    lines = markdown(rows, missing, summary, data, interval["model_error_log_sd"], seconds)
    lines += per_instruction_lines(result["per_instruction"], rows)
    lines += counted_lines(counted)
    name = "held_out" if args.engines == ENGINES else "-".join(["held_out", *args.engines])
    write_results(name.replace(".", ""), result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
