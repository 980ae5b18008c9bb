"""Where does the run-to-run noise of the quickstart come from on this machine?

Usage: python benchmarks/noise_sources.py MODEL_DIR [--processes 8] [--iterations 5]

MODEL_DIR is an exported MNN model, e.g. results/models/synth-qwen3-06b/mnn after
`snakemake --cores 4`. For each quickstart variant (thread_num 1 and 2), `processes` fresh
engine processes are run, interleaved; each loads the model, warms up once, then measures
prefill and decode `iterations` times in the same process (the workflow's own runner
functions). /proc/stat before and after shows how much CPU time the hypervisor reports
stolen and how much stayed idle.

It answers: is the noise within a process (then more measurements per process, pyperf
style, would shrink the CI) or between processes / over time (then only more processes or
a quieter machine would), and is it visible from inside the machine (then a "quiet gate"
before each invocation could avoid it)?
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

RUNNER_DIR = ROOT / "workflow" / "scripts" / "mnnrepro" / "engines" / "runner"

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import python_runner as r
import runner_timing as t
config, threads, k, p, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), 256, 32
llm, _ = r.load_llm(config, {"thread_num": threads})
t.time_phases(llm, p, n)
runs = [t.time_phases(llm, p, n) for _ in range(k)]
prefill = [p / run["prefill_s"] for run in runs]
decode = [n / run["decode_s"] for run in runs]
print(json.dumps({"prefill": prefill, "decode": decode}))
"""


def cpu_jiffies() -> list[int]:
    with open("/proc/stat") as fh:
        return [int(x) for x in fh.readline().split()[1:]]


def machine_share(start: list[int], end: list[int]) -> dict:
    """Shares of CPU time between two /proc/stat readings: stolen by the hypervisor, idle."""
    delta = [e - s for e, s in zip(end, start, strict=True)]
    total = sum(delta) or 1
    return {"steal_pct": 100 * delta[7] / total, "idle_pct": 100 * (delta[3] + delta[4]) / total}


def cv(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(100 * values.std(ddof=1) / values.mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=5)
    args = parser.parse_args(argv)
    config = str(Path(args.model_dir, "config.json"))
    runs = []
    start_jiffies = cpu_jiffies()
    for block in range(args.processes):
        order = (1, 2) if block % 2 == 0 else (2, 1)
        for threads in order:
            start = time.time()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    str(RUNNER_DIR),
                    config,
                    str(threads),
                    str(args.iterations),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            values = json.loads(proc.stdout.strip().splitlines()[-1])
            runs.append({"block": block, "threads": threads, "start_s": start, **values})
            print(
                f"block {block} threads {threads}: prefill {[round(v) for v in values['prefill']]}",
                flush=True,
            )
    machine = machine_share(start_jiffies, cpu_jiffies())

    rows = []
    for threads in (1, 2):
        for phase in ("prefill", "decode"):
            per_process = np.array([r[phase] for r in runs if r["threads"] == threads])
            rows.append(
                {
                    "threads": threads,
                    "phase": phase,
                    "between_processes_cv_pct": cv(per_process[:, 0]),
                    "within_process_cv_pct": float(np.mean([cv(values) for values in per_process])),
                    "cv_of_process_medians_pct": cv(np.median(per_process, axis=1)),
                }
            )
    result = {
        "processes_per_variant": args.processes,
        "iterations_per_process": args.iterations,
        "machine_during_run": machine,
        "rows": rows,
        "runs": runs,
    }
    lines = [
        "# Noise sources of the quickstart measurement",
        "",
        f"`python benchmarks/noise_sources.py MODEL_DIR --processes {args.processes} "
        f"--iterations {args.iterations}`: per variant {args.processes} fresh processes "
        f"(interleaved), {args.iterations} measurements each after one warm-up; P=256, N=32.",
        "",
        "| thread_num | phase | CV between processes (1st value) | CV within a process "
        "| CV of per-process medians |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['threads']} | {row['phase']} | {row['between_processes_cv_pct']:.1f} % "
            f"| {row['within_process_cv_pct']:.1f} % | {row['cv_of_process_medians_pct']:.1f} % |"
        )
    lines += [
        "",
        f"While it ran, /proc/stat reported {machine['steal_pct']:.2f} % of CPU time stolen by "
        f"the hypervisor and {machine['idle_pct']:.1f} % idle.",
        "",
        "Reading: if the CV of per-process medians stays near the between-process CV, more "
        "measurements per process do not help; the noise is between processes or over time.",
    ]
    write_results("noise_sources", result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
