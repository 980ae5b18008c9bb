"""The vivo X300's gain predicted before any phone run: config/predict-x300.yaml through the
workflow (the paper's two MNN 3.6.1 builds under QEMU at 512-bit vectors on one layer of
Qwen3-VL-4B's language model) and its prediction (results/predict-x300/prediction.json) with
the inputs' hashes. The published figures it is held out against: benchmarks/held_out.py.

Usage: python benchmarks/predicted_gain.py --mnn /path/to/MNN [--kleidiai URL]
                                           [--threads 1|4] [--workdir DIR] [--cores 2]

`--mnn` is a local checkout of MNN release 3.6.1; `--kleidiai` a mirror URL (e.g. file://) of
the pinned KleidiAI v1.16.0 tarball (same md5 as config/paper.yaml's pin). A rerun in the same
working directory measures only what is missing. It writes
benchmarks/results/predicted_gain.{json,md}; with `--threads 4` (the paper's thread count:
config/predict-x300-4-threads.yaml after it) benchmarks/results/predicted_gain-4-threads.*.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from ort_kleidiai import kept_or_temporary  # noqa: E402
from provenance import write_results  # noqa: E402
from real_mnn import KLEIDIAI_MD5, snakemake  # noqa: E402

from mnnrepro.analysis.attribution import read_profiles  # noqa: E402
from mnnrepro.engines.mnn_source.kind import BuiltEngine  # noqa: E402
from mnnrepro.toolchain.llvm_mca import LlvmTools, provide_llvm_mca  # noqa: E402

CONFIG = "config/predict-x300.yaml"
# threads -> (the config files, in order; the experiment; the results' name)
RUNS = {
    1: ([CONFIG], "predict-x300", "predicted_gain"),
    4: (
        [CONFIG, "config/predict-x300-4-threads.yaml"],
        "predict-x300-4-threads",
        "predicted_gain-4-threads",
    ),
}


def counted_functions(
    kernels: pd.DataFrame, device: str, waiting: str = BuiltEngine.waiting_functions, top: int = 5
) -> list[dict]:
    """Where the counted instructions are: per model, variant and phase (one profile) on the
    prediction's device, the functions with the most, each with its share of the profile's
    and whether it is one of the engine's waiting functions (its thread pool's: `waiting`,
    the kind's EngineKind.waiting_functions, MNN's unless given), which the prediction leaves
    out of the work."""
    rows = []
    profiled = kernels[(kernels["device"] == device) & kernels["instructions"].notna()]
    for (model, variant, phase), group in profiled.groupby(["model", "variant", "phase"]):
        total = group["instructions"].sum()
        for r in group.nlargest(top, "instructions").itertuples():
            symbol = r.symbol if isinstance(r.symbol, str) else "(outside any symbol)"
            rows.append(
                {
                    "model": model,
                    "variant": variant,
                    "phase": phase,
                    "symbol": symbol,
                    "instructions": int(r.instructions),
                    "share": r.instructions / total,
                    "waiting": bool(re.search(waiting, symbol)),
                }
            )
    return rows


def counted_lines(rows: list[dict], of: str = "") -> list[str]:
    lines = [
        f"## Where the counted instructions are{of} (the 5 functions with most, per profile)",
        "",
        "| counted model | variant | phase | function | instructions | share | waiting (left "
        "out) |",
        "|---|---|---|---|---:|---:|---|",
    ]
    lines += [
        f"| {r['model']} | {r['variant']} | {r['phase']} | `{r['symbol'][:90]}` | "
        f"{r['instructions']:,} | "
        f"{r['share']:.1%} | {'yes' if r['waiting'] else 'no'} |"
        for r in rows
    ]
    return [*lines, ""]


def markdown(document: dict, run: dict, configs: list[str]) -> list[str]:
    (threads,) = {p["threads"][1] for p in document["predictions"]}
    option = "" if threads == 1 else f" --threads {threads}"
    lines = [
        "# The vivo X300's SME2 gain predicted before the phone (benchmarks/predicted_gain.py)",
        "",
        f"Command: `python benchmarks/predicted_gain.py --mnn <MNN 3.6.1> --kleidiai <KleidiAI "
        f"v1.16.0 tarball>{option}` ({' then '.join(configs)} through the workflow: "
        f"{run['seconds']} s this invocation; a rerun measures only what is missing), both "
        f"variants at {threads} thread{'s' if threads > 1 else ''}. The prediction is the "
        "workflow's own prediction.md, below; every constant with its source is "
        "config/cost_model.yaml.",
        "",
        "Held out: the published SME2 figures on the same phone, each predicted from counts "
        "of its own model, are benchmarks/results/held_out.md (benchmarks/held_out.py); the "
        "model error of this prediction's intervals is theirs (config/cost_model.yaml's "
        "`model_error`). The article's own +81 % / +13 % gives no thread count and is not "
        "held out: it is the claim being predicted.",
        "",
    ]
    if threads > 1:
        lines += [
            f"**At {threads} threads** a thread that waits for another executes instructions "
            "as long as it waits, and under QEMU how long it waits follows the emulator's "
            "speeds, not the phone's: the prediction leaves out the instructions of MNN's "
            "thread pool (its workers' polling loop, enqueue's wait for them; `waiting` below). "
            "What it keeps is the work. With 4 threads the SME2 build splits each int8/int4 "
            "GEMM between the SME2 unit and NEON threads in a prefill share that differs from "
            "decode's, and reorders the weights for that split in every prefill "
            "(`DenseConvInt8TiledExecutor::onExecute`, scalar code, absent at 1 thread and in "
            "decode): the same count in the full and the short prefill (`prefill_short` below), "
            "so a cost paid once per prefill, which the prediction spreads over the prompt it "
            "is for, not over the profiled one's tokens.",
            "",
        ]
    return lines


def predicted_run(
    workdir: str,
    configs,
    mnn: dict | None,
    cores: int,
    experiment: str,
    *tables: str,
    llamacpp: dict | None = None,
) -> tuple:
    """A prediction's config through the workflow in workdir (kept and reused; empty: a
    temporary one), `mnn` and `llamacpp` merged into its sections of those names: (the run,
    with every validity check of the prediction's device under `validity` and its counted
    profiles under `profiles`, prediction.json,
    prediction.md, kernels.csv, and each of the experiment's other tables named)."""
    with kept_or_temporary(workdir) as work:
        run = snakemake(work, configs, mnn, cores, llamacpp=llamacpp)
        out = work / "results" / experiment
        document = json.loads((out / "prediction.json").read_text())
        run["validity"] = [
            {**check, "model": path.stem}
            for path in sorted((out / "validity" / document["device"]).glob("*.json"))
            for check in json.loads(path.read_text())["checks"]
        ]
        run["profiles"] = read_profiles(sorted((out / "profiles").glob("*/*.json")))
        prediction_md = (out / "prediction.md").read_text()
        kernels = pd.read_csv(out / "kernels.csv", keep_default_na=False, na_values=[""])
        others = [pd.read_csv(out / f"{name}.csv") for name in tables]
    return (run, document, prediction_md, kernels, *others)


def counting_run_arguments(parser: argparse.ArgumentParser) -> None:
    """A counting run's arguments: the MNN checkout, the KleidiAI mirror, the kept working
    directory, the cores."""
    parser.add_argument("--mnn", required=True, help="a local MNN 3.6.1 checkout")
    parser.add_argument("--kleidiai", help="URL of the KleidiAI v1.16.0 tarball (a mirror)")
    parser.add_argument("--workdir", default="", help="kept and reused")
    parser.add_argument("--cores", type=int, default=2)


def mnn_config(args: argparse.Namespace) -> dict:
    """The config key `mnn` of a counting run: the checkout, and the KleidiAI mirror if given."""
    mnn = {"source": {"path": str(Path(args.mnn).resolve())}}
    if args.kleidiai:
        mnn["kleidiai"] = {"version": "v1.16.0", "url": args.kleidiai, "md5": KLEIDIAI_MD5}
    return mnn


def pinned_llvm_mca(workdir: str) -> LlvmTools:
    """The pinned llvm-mca (config/cost_model.yaml's `llvm_mca`), fetched and unpacked under
    the kept working directory (the system's temporary directory without one)."""
    pins = yaml.safe_load((ROOT / "config" / "cost_model.yaml").read_text())["llvm_mca"]
    site = Path(workdir).resolve() if workdir else Path(tempfile.gettempdir())
    return LlvmTools.of(provide_llvm_mca(pins, site / "llvm-mca"))


def threads_parser(description: str) -> argparse.ArgumentParser:
    """A counting run's arguments and `--threads` (RUNS' thread counts)."""
    parser = argparse.ArgumentParser(description=description)
    counting_run_arguments(parser)
    parser.add_argument("--threads", type=int, choices=sorted(RUNS), default=1)
    return parser


def threads_run(args: argparse.Namespace) -> tuple:
    """RUNS' run for the arguments' thread count: (its configs, its results' name, and
    predicted_run's run, prediction.json, prediction.md and kernels.csv)."""
    configs, experiment, name = RUNS[args.threads]
    run = predicted_run(args.workdir, configs, mnn_config(args), args.cores, experiment)
    return (configs, name, *run)


def main(argv: list[str] | None = None) -> int:
    args = threads_parser(__doc__.splitlines()[0]).parse_args(argv)
    configs, name, run, document, prediction_md, kernels = threads_run(args)
    counted = counted_functions(kernels, document["device"])
    result = {
        "config": configs[-1],
        "configs": configs,
        "seconds": run["seconds"],
        "prediction": document,
        "counted_functions": counted,
    }
    lines = markdown(document, run, configs) + counted_lines(counted)
    lines += ["#" + line if line.startswith("#") else line for line in prediction_md.splitlines()]
    write_results(name, result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
