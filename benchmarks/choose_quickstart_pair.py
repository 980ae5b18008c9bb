"""Which runtime pair shows the paper's mechanism (prefill gains >> decode gains), stably?

Usage: python benchmarks/choose_quickstart_pair.py MODEL_DIR [--rounds 3] [--reps 6]

MODEL_DIR is an exported MNN model, e.g. results/models/synth-qwen3-06b/mnn after
`snakemake --cores 4`. Each candidate pair is measured in `rounds` independent rounds of
`reps` interleaved repetitions (the workflow's own runner, schedule and statistics); the
spread of the gains across rounds shows how stable the effect is on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import stamped  # noqa: E402

from mnnrepro.analysis.tables import rows_from_record  # noqa: E402
from mnnrepro.config import VARIANT_SCHEMA, with_schema_defaults  # noqa: E402
from mnnrepro.design import variants_of  # noqa: E402
from mnnrepro.devices.local import LocalDevice  # noqa: E402
from mnnrepro.engines.mnn_wheel.kind import describe_prebuilt  # noqa: E402
from mnnrepro.engines.registry import EngineRecord  # noqa: E402
from mnnrepro.runs.benchmark import run_schedule  # noqa: E402
from mnnrepro.runs.raw_files import variant_specs  # noqa: E402
from mnnrepro.runs.schedule import interleaved  # noqa: E402
from mnnrepro.runs.staging import push_receipt  # noqa: E402
from mnnrepro.sections import Bench  # noqa: E402
from mnnrepro.stats import Interval, compare_phase  # noqa: E402

CANDIDATES = {
    "thread_num 1 -> 2": ({"thread_num": 1}, {"thread_num": 2}),
    "precision normal -> low (2 threads)": (
        {"thread_num": 2, "precision": "normal"},
        {"thread_num": 2, "precision": "low"},
    ),
    "memory normal -> low (2 threads)": (
        {"thread_num": 2, "memory": "normal"},
        {"thread_num": 2, "memory": "low"},
    ),
}
# the whole bench, as the plan hands a job one: the schema's defaults for the rest
BENCH = with_schema_defaults(
    {
        "prompt_tokens": 256,
        "generate_tokens": 32,
        "warmup": 1,
        "timeout_s": 600,
        "retries": 0,
        "cooldown_s": 0,
        "max_other_load": None,  # as measured for quickstart_pair.md: no quiet gate
    },
    "properties",
    "bench",
)


def measure(model_dir: str, base: dict, treat: dict, reps: int, seed: int):
    engine = EngineRecord.of(describe_prebuilt("mnn-pypi", "mnn==3.6.1"))
    specs = variant_specs(
        variants_of(
            {
                name: with_schema_defaults({"engine": "e", "runtime": runtime}, *VARIANT_SCHEMA)
                for name, runtime in (("base", base), ("treat", treat))
            }
        ),
        {"e": engine},
        "bench",
        {},  # no variant hides SME: no mask pushed
    )
    device = LocalDevice("host")
    with tempfile.TemporaryDirectory() as raw:
        receipt = push_receipt(device, {"mnn": model_dir}, "model")
        index, _ = run_schedule(
            device, interleaved(["base", "treat"], reps), specs, receipt, Bench.of(BENCH), raw
        )
        rows = []
        for entry in index:
            record = json.loads(Path(entry["raw"]).read_text())
            rows += rows_from_record(record, "bench", "model", False, entry["raw"], entry["sha256"])
    device.close()
    table = pd.DataFrame(rows)
    out = {}
    for phase in ("prefill", "decode"):
        part = table[table["phase"] == phase]
        out[phase] = compare_phase(part, "base", "treat", Interval("t", 0.95, None, 0, seed), 0.02)
    return out, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--only", help="measure only the candidate whose name contains this")
    args = parser.parse_args(argv)
    results, runs = [], []
    for name, (base, treat) in CANDIDATES.items():
        if args.only and args.only not in name:
            continue
        rounds = args.rounds if name.startswith("thread_num") else 1
        for r in range(rounds):
            res, table = measure(args.model_dir, base, treat, args.reps, seed=r)
            table = table.assign(pair=name, round=r, model=f"round-{r}")
            runs.append(table)
            for phase, stats in res.items():
                results.append({"pair": name, "round": r, "phase": phase, **stats})
            print(name, r, {p: round(s["ratio"] - 1, 3) for p, s in res.items()}, flush=True)
    table = pd.DataFrame(results)
    OUT = ROOT / "benchmarks" / "results"
    OUT.mkdir(parents=True, exist_ok=True)
    table.to_csv(OUT / "quickstart_pair.csv", index=False)
    pd.concat(runs).to_csv(OUT / "quickstart_pair_runs.csv", index=False)
    lines = [
        "# Choosing the quickstart pair",
        "",
        f"Prefill {BENCH['prompt_tokens']} tokens, decode {BENCH['generate_tokens']} tokens, "
        f"{args.reps} interleaved repetitions per variant and round; gain = speedup - 1 "
        "(geometric mean of paired ratios, 95 % Student t CI on the log ratios).",
        "",
        "| pair | round | phase | gain | CI | CV base | CV treat |",
        "|---|---:|---|---:|---|---:|---:|",
    ]
    for row in table.itertuples():
        lines.append(
            f"| {row.pair} | {row.round} | {row.phase} | {row.ratio - 1:+.1%} | "
            f"[{row.ci_low - 1:+.1%}, {row.ci_high - 1:+.1%}] | {row.cv_baseline:.1%} | "
            f"{row.cv_treatment:.1%} |"
        )
    lines += ["", "Across rounds (mean ± SD of the gain):", ""]
    for (pair, phase), g in table.groupby(["pair", "phase"], sort=False):
        gains = g["ratio"] - 1
        sd = f" ± {gains.std(ddof=1):.1%}" if len(gains) > 1 else ""
        lines.append(f"- {pair}, {phase}: {gains.mean():+.1%}{sd} ({len(gains)} rounds)")
    (OUT / "quickstart_pair.md").write_text(stamped("\n".join(lines) + "\n"))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
