"""The vivo X300's gain predicted before the phone with every counted instruction priced one by
one: benchmarks/predicted_gain.py's counting run (config/predict-x300.yaml; with `--threads 4`
config/predict-x300-4-threads.yaml after it), predicted by the workflow by class, then by the
workflow again with config/predict-per-instruction.yaml on top (`prediction.pricing:
per_instruction`: the profiles priced by the pinned llvm-mca's C1-Ultra model, fetched by rule
fetch_llvm_mca; its interval's model error is config/cost_model.yaml's
`model_error.log_sd_per_instruction`). The counting is shared: the second run makes only the
prediction again. As a check of the workflow's path, the benchmark prices the same profiles
itself (analysis/instruction_prices.priced_run, prediction.unit_gains) and requires the same
gains.

Usage: python benchmarks/predicted_gain_per_instruction.py --mnn /path/to/MNN [--kleidiai URL]
                                       [--threads 1|4] [--workdir DIR] [--cores 2]

It writes benchmarks/results/predicted_gain_per_instruction{,-4-threads}.{json,md}. The
registered prediction (config/paper-predicted.yaml) is not changed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from ort_kleidiai import kept_or_temporary  # noqa: E402
from predicted_gain import RUNS, mnn_config, predicted_run, threads_parser  # noqa: E402
from provenance import write_results  # noqa: E402

from mnnrepro.analysis.cost_model import LEVEL, CostModel  # noqa: E402
from mnnrepro.analysis.instruction_prices import priced_run  # noqa: E402
from mnnrepro.analysis.prediction import Target, unit_gains  # noqa: E402
from mnnrepro.analysis.prediction_text import moving  # noqa: E402
from mnnrepro.engines.mnn_source.kind import BuiltEngine  # noqa: E402
from mnnrepro.phases import PHASES  # noqa: E402
from mnnrepro.plan.prediction import LLVM_MCA_RECEIPT  # noqa: E402
from mnnrepro.toolchain.llvm_mca import LlvmTools  # noqa: E402

COSTS = ROOT / "config" / "cost_model.yaml"
PER_INSTRUCTION = "config/predict-per-instruction.yaml"


def own_pricing(run: dict, document: dict, tools: LlvmTools) -> dict[tuple, float]:
    """Per pair and phase, the gain this benchmark computes from the run's profiles itself
    (priced_run, unit_gains): what the workflow's per-instruction prediction must equal."""
    keys = (document["core"], document["soc"], document["model"])
    cost = CostModel.read(COSTS, *keys, "per_instruction")  # with the core's llvm-mca options
    device = document["device"]
    counted = [p for p in run["profiles"] if p.get("device") == device]
    table = priced_run(counted, tools, cost.llvm_mca)
    profiled = document["profiled_bench"]
    tokens = {"prefill": profiled["prompt_tokens"], "decode": profiled["generate_tokens"]}
    prompt, generated = document["bench"]["prompt_tokens"], document["bench"]["generate_tokens"]
    gains = {}
    for p in document["predictions"]:
        target = Target.of(cost, p["scale"], prompt, generated)
        pair, threads = (p["baseline"], p["treatment"]), tuple(p["threads"])
        where, waiting = (device, p["model"]), BuiltEngine.waiting_functions
        got = unit_gains(table, where, pair, tokens, prompt, cost, target, threads, waiting)
        gains.update({(p["pair"], phase): got[phase] for phase in PHASES})
    return gains


def compared_rows(by_class: dict, priced: dict, own: dict[tuple, float]) -> list[dict]:
    """Per pair and phase: the workflow's prediction by class and per instruction, with their
    intervals; a per-instruction gain that is not the benchmark's own stops the benchmark."""
    classes = {p["pair"]: p for p in by_class["predictions"]}
    rows = []
    for p in priced["predictions"]:
        for phase in PHASES:
            mine, theirs = p["phases"][phase], classes[p["pair"]]["phases"][phase]
            if not math.isclose(mine["gain"], own[(p["pair"], phase)], rel_tol=1e-9):
                raise SystemExit(
                    f"{p['pair']} {phase}: the workflow priced a gain of {mine['gain']}, this "
                    f"benchmark {own[(p['pair'], phase)]} from the same profiles"
                )
            rows.append(
                {
                    "pair": p["pair"],
                    "threads": p["threads"],
                    "phase": phase,
                    "by_class": theirs["gain"],
                    "by_class_interval": [theirs["low"], theirs["high"]],
                    "per_instruction": mine["gain"],
                    "interval": [mine["low"], mine["high"]],
                    "high_over_low": (1 + mine["high"]) / (1 + mine["low"]),
                    "most_sensitive_to": [s["constant"] for s in moving(mine)[:2]],
                }
            )
    return rows


def markdown(result: dict, option: str) -> list[str]:
    lines = [
        "# The vivo X300's gain priced instruction by instruction "
        "(benchmarks/predicted_gain_per_instruction.py)",
        "",
        f"Command: `python benchmarks/predicted_gain_per_instruction.py --mnn <MNN 3.6.1> "
        f"--kleidiai <KleidiAI v1.16.0 tarball>{option}` ({' then '.join(result['configs'])}, "
        f"then with {PER_INSTRUCTION} on top, through the workflow: {result['seconds']} s this "
        "invocation). Both columns are the workflow's own prediction.json of the same counts: "
        "by class, and with each executed instruction priced by "
        f"{result['priced_by']} (`-mcpu=c1-ultra`; streaming mode for the functions that run "
        "SME), the busiest unit or the dispatch width bounding a token's cycles, for the "
        f"{result['prompt_tokens']}-token prompt. Interval: {LEVEL:.0%}, the ranged constants "
        f"drawn and a model error of log sd {result['model_error_log_sd']:.3f} "
        f"({result['model_error_source']}); held-out figures are prefill only, so decode's "
        "model error is prefill's. This benchmark priced the same profiles itself and got the "
        "same gains.",
        "",
        "| pair | threads | phase | by class | per instruction | interval | high / low | "
        "most sensitive to |",
        "|---|---|---|---|---:|---|---:|---|",
    ]
    for r in result["rows"]:
        low, high = r["by_class_interval"]
        lines.append(
            f"| {r['pair']} | {r['threads'][1]} | {r['phase']} | {r['by_class']:+.0%} "
            f"[{low:+.0%}, {high:+.0%}] | {r['per_instruction']:+.0%} | "
            f"[{r['interval'][0]:+.0%}, {r['interval'][1]:+.0%}] | {r['high_over_low']:.2f} | "
            f"{', '.join(r['most_sensitive_to']) or '-'} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    args = threads_parser(__doc__.splitlines()[0]).parse_args(argv)
    configs, experiment, name = RUNS[args.threads]
    mnn = mnn_config(args)
    with kept_or_temporary(args.workdir) as work:  # one working directory for both runs
        run, by_class, *_ = predicted_run(str(work), configs, mnn, args.cores, experiment)
        both = [*configs, PER_INSTRUCTION]
        again, priced, *_ = predicted_run(str(work), both, mnn, args.cores, experiment)
        receipt = json.loads((work / LLVM_MCA_RECEIPT).read_text())  # rule fetch_llvm_mca's
        own = own_pricing(run, priced, LlvmTools.of(receipt))
    result = {
        "configs": configs,
        "seconds": round(run["seconds"] + again["seconds"], 1),
        "priced_by": priced["priced_by"],
        "prompt_tokens": priced["bench"]["prompt_tokens"],
        "model_error_log_sd": priced["interval"]["model_error_log_sd"],
        "model_error_source": priced["interval"]["model_error_source"],
        "prediction": priced,
        "rows": compared_rows(by_class, priced, own),
    }
    option = "" if args.threads == 1 else f" --threads {args.threads}"
    lines = markdown(result, option)
    write_results(name.replace("predicted_gain", "predicted_gain_per_instruction"), result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
