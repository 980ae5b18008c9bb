"""How far MNN's llm_bench timers are from the workflow's runner timers, measured on one real
MNN build in one process (benchmarks/llm_bench_timers/mnn_timers.cpp: both ways of timing,
alternating, on the same engine, model and settings).

Usage: python benchmarks/llm_bench_timers.py --mnn /path/to/MNN [--workdir DIR] [--reps 20]
                                             [--threads 1] [--cores 2]

`--mnn` is a local checkout of MNN release 3.6.1 (the workflow records its commit). In the
working directory (a fresh temporary one unless given; a rerun there builds nothing again) the
workflow builds MNN for this host (config/host-sme2.yaml's flags, SME2 off: x86 has none) with
its gate tools and exports the quickstart's model; then mnn_timers is built against that
engine as a gate tool is, the engine configured for it as llm_bench configures it
(engines/mnn_source/kind.llm_bench_config), and run. Per phase it reports each method's tokens
per second and the runner's speed over llm_bench's (geometric mean of the paired repetitions,
95 % t interval): what llm_bench's timers leave out (the prompt's embedding, the sampler) and
hold beyond the definition (detokenising), at this model's size. Writes
benchmarks/results/llm_bench_timers.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from provenance import write_results  # noqa: E402

from mnnrepro.engines.mnn_source import llmbench  # noqa: E402
from mnnrepro.engines.mnn_source.kind import LEVELS, llm_bench_config  # noqa: E402
from mnnrepro.engines.registry import EngineRecord  # noqa: E402
from mnnrepro.phases import PHASES  # noqa: E402
from mnnrepro.stats import t_interval  # noqa: E402
from mnnrepro.toolchain.tools import GateTool, build_gate_tool  # noqa: E402

TOOL = GateTool(Path(__file__).with_name("llm_bench_timers"), "mnn_timers", "MNN")
EXPERIMENT = "llm-bench-timers"
MODEL = "synth-qwen3-06b"
PROMPT, GENERATE = 256, 32  # the quickstart's benchmark


def runtime(threads: int) -> dict:
    """The quickstart's runtime settings at `threads`, every key llm_bench sets."""
    levels = {"precision": "low", "memory": "low", "power": "normal", "backend_type": "cpu"}
    return {"thread_num": threads, **levels}


def model_dir(workdir: Path) -> Path:
    return workdir / "results" / "models" / MODEL / "mnn"


def run_engine_program(argv: list[str], engine_dir: Path, cwd: Path | None = None):
    """One of the engine's programs with its libraries alone (as the workflow runs them)."""
    env = {"LD_LIBRARY_PATH": str(engine_dir), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"$ {' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def config(mnn: str, threads: int) -> dict:
    """One host build of MNN (config/host-sme2.yaml's flags, SME2 off) and the quickstart's
    model, for `build_all` and `models_all`."""
    host = yaml.safe_load((ROOT / "config" / "host-sme2.yaml").read_text())
    quickstart = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    return {
        "experiment": EXPERIMENT,
        "mnn": {"source": {"path": mnn}},
        "engines": {"mnn-host": host["engines"]["sme2-off"]},
        "models": {MODEL: quickstart["models"][MODEL]},
        "devices": {"host": {"local": {}}},
        # two variants alike (the schema asks for a pair): nothing here is benchmarked by them
        "variants": {v: {"engine": "mnn-host", "runtime": runtime(threads)} for v in "ab"},
        "bench": {"prompt_tokens": PROMPT, "generate_tokens": GENERATE, "repetitions": 2},
        "correctness": quickstart["correctness"],
        "comparison": {"baseline": "a", "treatment": "b"},
    }


def snakemake(workdir: Path, configfile: Path, cores: int, *targets: str) -> float:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), *targets]
    cmd += ["--directory", str(workdir), "--cores", str(cores), "--configfile", str(configfile)]
    start = time.perf_counter()  # the targets first: --configfile takes every value after it
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"$ {' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return round(time.perf_counter() - start, 1)


def built_tool(workdir: Path) -> tuple[Path, Path, dict, dict]:
    """mnn_timers built against the workflow's engine: its path, the engine's directory, the
    engine's and the tool's records."""
    (build_json,) = workdir.glob("results/engines/*/build.json")
    record = EngineRecord.of(json.loads(build_json.read_text()))
    engine_dir, out = build_json.parent / "bin", workdir / "mnn-timers"
    with open(workdir / "mnn-timers.log", "w") as log:
        tool = build_gate_tool(
            TOOL,
            record,
            record.as_written["source"],
            str(engine_dir),
            str(workdir / "mnn-timers-build"),
            str(out),
            log,
        )
    return out / TOOL.program, engine_dir, dict(record.as_written), tool


def engine_config(workdir: Path, threads: int) -> Path:
    """The model's config.json with every setting llm_bench 3.6.1 applies (its other options
    at their defaults), beside the model (base_dir)."""
    folder = model_dir(workdir)
    original = json.loads((folder / "config.json").read_text())
    settings = llm_bench_config(runtime(threads), PROMPT)
    written = {**original, **settings, "base_dir": f"{folder}/"}
    path = workdir / "config.timers.json"
    path.write_text(json.dumps(written, indent=2))
    return path


def measure(tool: Path, engine_dir: Path, config_path: Path, reps: int, out: Path) -> list[dict]:
    argv = [str(tool), str(config_path), str(PROMPT), str(GENERATE), str(reps), str(out)]
    run_engine_program(argv, engine_dir)
    return [json.loads(line) for line in out.read_text().splitlines()]


def llm_bench_itself(engine_dir: Path, workdir: Path, threads: int, reps: int) -> dict:
    """The engine's own llm_bench on the same model and settings (as the workflow runs it:
    llmbench.build_args, -rep reps): its tok/s per phase, mean and SD, to set beside
    mnn_timers' llm_bench method (the same timers, another process)."""
    model_config = model_dir(workdir) / "config.json"
    out = workdir / "llm_bench.json"
    argv = llmbench.build_args(
        str(engine_dir / "llm_bench"),
        str(model_config),
        PROMPT,
        GENERATE,
        threads,
        LEVELS["low"],
        str(out),
        repetitions=reps,
    )
    argv += ["--memory", str(LEVELS["low"])]
    proc = run_engine_program(argv, engine_dir, cwd=workdir)  # llm_bench writes ./tmp
    rows = llmbench.parse_json(out.read_text())
    llmbench.cross_check(llmbench.parse_table(proc.stdout), rows)
    return {r["phase"]: {"tps": r["tps"], "std": r["std"], "reps": reps} for r in rows}


def rates(runs: list[dict], method: str, phase: str) -> np.ndarray:
    """Tokens per second per repetition, in repetition order."""
    mine = sorted((r for r in runs if r["method"] == method), key=lambda r: r["rep"])
    tokens = "prompt_tokens" if phase == "prefill" else "decode_tokens"
    return np.array([r[tokens] / (r[f"{phase}_us"] / 1e6) for r in mine])


def compared(runs: list[dict]) -> dict:
    """Per phase: each method's median tok/s and the runner's over llm_bench's (geometric
    mean of the paired repetitions, 95 % t interval on the log ratios)."""
    out = {}
    for phase in PHASES:
        bench, runner = rates(runs, "llm_bench", phase), rates(runs, "runner", phase)
        logs = np.log(runner) - np.log(bench)
        low, high = t_interval(logs, 0.95)
        out[phase] = {
            "llm_bench_tps": float(np.median(bench)),
            "runner_tps": float(np.median(runner)),
            "ratio": float(np.exp(logs.mean())),
            "ci_low": float(low),
            "ci_high": float(high),
            "pairs": int(logs.size),
        }
    return out


def markdown(result: dict) -> list[str]:
    lines = [
        "# MNN's llm_bench timers against the workflow's runner timers",
        "",
        f"Command: `{result['command']}`. One MNN build for this host from "
        f"{result['source']} (flags of config/host-sme2.yaml's `sme2-off`, {result['compiler']}), "
        f"the quickstart's model ({MODEL}: Qwen3-0.6B's shape, 4-bit), {result['threads']} "
        f"thread(s), P = {PROMPT}, N = {GENERATE}; both timers in one process "
        "(benchmarks/llm_bench_timers/mnn_timers.cpp), alternating, after one unmeasured run "
        "of each. The engine configured as llm_bench configures it.",
        "",
        "- llm_bench: `Llm::response`, then the context's `prefill_us` (the prompt's forward "
        "pass; its embeddings before the clock) and `decode_us` (per token: detokenising, the "
        "forward pass with its embedding; the sampler outside);",
        "- runner: `Llm::forward`, the last logits row read out and its argmax, per phase "
        "(engines/timers.py `RUNNER_STEPS`, as the Python and C runners time).",
        "",
        "| phase | llm_bench tok/s (median) | runner tok/s (median) | runner / llm_bench | "
        "95 % interval | pairs |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for phase, r in result["phases"].items():
        lines.append(
            f"| {phase} | {r['llm_bench_tps']:.1f} | {r['runner_tps']:.1f} | {r['ratio']:.4f} | "
            f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}] | {r['pairs']} |"
        )
    itself = result["llm_bench_itself"]
    lines += [
        "",
        "The engine's own `llm_bench` on the same model and settings, run as the workflow runs "
        f"it (`-kv true -rep {next(iter(itself.values()))['reps']}`, its own process): "
        + "; ".join(f"{phase} {r['tps']:.1f} ± {r['std']:.1f} tok/s" for phase, r in itself.items())
        + " (the llm_bench method above: the same timers in mnn_timers' process).",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnn", required=True, help="a local MNN 3.6.1 checkout")
    parser.add_argument("--workdir", default="", help="kept and reused")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="llm-bench-timers-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(config(str(Path(args.mnn).resolve()), args.threads)))
    workflow_s = snakemake(workdir, configfile, args.cores, "build_all", "models_all")
    tool, engine_dir, engine, built = built_tool(workdir)
    config_path = engine_config(workdir, args.threads)
    runs = measure(tool, engine_dir, config_path, args.reps, workdir / "timers.jsonl")
    itself = llm_bench_itself(engine_dir, workdir, args.threads, max(3, args.reps // 4))
    command = f"python benchmarks/llm_bench_timers.py --mnn <MNN 3.6.1> --reps {args.reps}"
    command += f" --threads {args.threads}"
    result = {
        "command": command,
        "threads": args.threads,
        "workflow_s": workflow_s,
        "source": f"commit {engine['source']['commit'][:10]}",
        "compiler": engine["compiler"]["version"],
        "tool": {k: built[k] for k in ("tool", "compiler", "source_sha256")},
        "phases": compared(runs),
        "llm_bench_itself": itself,
        "runs": runs,
    }
    write_results("llm_bench_timers", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
