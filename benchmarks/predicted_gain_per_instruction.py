"""The vivo X300's gain predicted before the phone with every counted instruction priced one by
one: benchmarks/predicted_gain.py's counting run (config/predict-x300.yaml; with `--threads 4`
config/predict-x300-4-threads.yaml after it), its profiles priced by the pinned llvm-mca's
C1-Ultra model (analysis/instruction_prices.py), for the workflow's prompt, beside the
workflow's own prediction by class. The interval's model error is the held-out figures' root-
mean-square log error with the same pricing (benchmarks/results/held_out.json's
`per_instruction`), at the prediction's level; no constant is ranged.

Usage: python benchmarks/predicted_gain_per_instruction.py --mnn /path/to/MNN [--kleidiai URL]
                                       [--threads 1|4] [--workdir DIR] [--cores 2]

It writes benchmarks/results/predicted_gain_per_instruction{,-4-threads}.{json,md}. The
registered prediction (config/paper-predicted.yaml) is the workflow's and is not changed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from predicted_gain import pinned_llvm_mca, threads_parser, threads_run  # noqa: E402
from provenance import write_results  # noqa: E402

from mnnrepro.analysis.cost_model import LEVEL, CostModel  # noqa: E402
from mnnrepro.analysis.instruction_prices import priced_run  # noqa: E402
from mnnrepro.analysis.prediction import Target, error_interval, unit_gains  # noqa: E402
from mnnrepro.engines.mnn_source.kind import BuiltEngine  # noqa: E402
from mnnrepro.phases import PHASES  # noqa: E402
from mnnrepro.toolchain.llvm_mca import LlvmTools  # noqa: E402

COSTS = ROOT / "config" / "cost_model.yaml"
HELD_OUT = ROOT / "benchmarks" / "results" / "held_out.json"


def priced_prediction(run: dict, document: dict, tools: LlvmTools, log_sd: float) -> list[dict]:
    """Per pair of the workflow's prediction: per phase its gain by class (the workflow's),
    per instruction, and the latter's interval at LEVEL with model error log_sd."""
    costs = yaml.safe_load(COSTS.read_text())
    device = document["device"]
    counted = [p for p in run["profiles"] if p.get("device") == device]
    table = priced_run(counted, tools, costs["cores"][document["core"]]["llvm_mca"])
    profiled = document["profiled_bench"]
    tokens = {"prefill": profiled["prompt_tokens"], "decode": profiled["generate_tokens"]}
    prompt, generated = document["bench"]["prompt_tokens"], document["bench"]["generate_tokens"]
    rows = []
    for p in document["predictions"]:
        cost = CostModel.read(COSTS, document["core"], document["soc"], document["model"])
        target = Target.of(cost, p["scale"], prompt, generated)
        pair, threads = (p["baseline"], p["treatment"]), tuple(p["threads"])
        waiting = BuiltEngine.waiting_functions
        gains = unit_gains(
            table, (device, p["model"]), pair, tokens, prompt, cost, target, threads, waiting
        )
        for phase in PHASES:
            low, high = error_interval(gains[phase], log_sd)
            rows.append(
                {
                    "pair": p["pair"],
                    "threads": p["threads"],
                    "phase": phase,
                    "by_class": p["phases"][phase]["gain"],
                    "by_class_interval": [p["phases"][phase][k] for k in ("low", "high")],
                    "per_instruction": gains[phase],
                    "interval": [low, high],
                    "high_over_low": (1 + high) / (1 + low),
                }
            )
    return rows


def markdown(result: dict, option: str) -> list[str]:
    lines = [
        "# The vivo X300's gain priced instruction by instruction "
        "(benchmarks/predicted_gain_per_instruction.py)",
        "",
        f"Command: `python benchmarks/predicted_gain_per_instruction.py --mnn <MNN 3.6.1> "
        f"--kleidiai <KleidiAI v1.16.0 tarball>{option}` ({' then '.join(result['configs'])} "
        f"through the workflow: {result['seconds']} s this invocation). The same counts as the "
        "workflow's prediction, each executed instruction priced by "
        f"{result['llvm_mca']} (`-mcpu=c1-ultra`; streaming mode for the functions that run "
        "SME), the busiest unit or the dispatch width bounding a token's cycles, for the "
        f"{result['prompt_tokens']}-token prompt. Interval: {LEVEL:.0%}, the model error "
        f"log sd {result['model_error_log_sd']:.3f} of the held-out figures priced the same way "
        f"({result['held_out']}); held-out figures are prefill only, so decode's "
        "interval borrows prefill's error.",
        "",
        "| pair | threads | phase | by class (the workflow's) | per instruction | interval | "
        "high / low |",
        "|---|---|---|---|---:|---|---:|",
    ]
    for r in result["rows"]:
        low, high = r["by_class_interval"]
        lines.append(
            f"| {r['pair']} | {r['threads'][1]} | {r['phase']} | {r['by_class']:+.0%} "
            f"[{low:+.0%}, {high:+.0%}] | {r['per_instruction']:+.0%} | "
            f"[{r['interval'][0]:+.0%}, {r['interval'][1]:+.0%}] | {r['high_over_low']:.2f} |"
        )
    return lines


def held_out_error(path: Path) -> float:
    """The held-out figures' root-mean-square log error priced the same way (one line naming
    the file where it has none)."""
    scored = json.loads(path.read_text()).get("per_instruction")
    if not scored or not scored["summary"].get("predicted"):
        raise SystemExit(
            f"{path}: no figures priced instruction by instruction; run "
            "benchmarks/held_out.py first"
        )
    return scored["summary"]["rms_log_error"]


def main(argv: list[str] | None = None) -> int:
    parser = threads_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--held-out", type=Path, default=HELD_OUT,
        help="the held-out results whose per-instruction error sets the interval",
    )  # fmt: skip
    args = parser.parse_args(argv)
    log_sd = held_out_error(args.held_out)  # before any run
    configs, name, run, document, _, _ = threads_run(args)
    tools = pinned_llvm_mca(args.workdir)
    result = {
        "configs": configs,
        "seconds": run["seconds"],
        "llvm_mca": tools.version(),
        "prompt_tokens": document["bench"]["prompt_tokens"],
        "model_error_log_sd": log_sd,
        "held_out": str(args.held_out.resolve().relative_to(ROOT)),
        "rows": priced_prediction(run, document, tools, log_sd),
    }
    option = "" if args.threads == 1 else f" --threads {args.threads}"
    lines = markdown(result, option)
    write_results(name.replace("predicted_gain", "predicted_gain_per_instruction"), result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
