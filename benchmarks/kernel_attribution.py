"""What ran, measured: run an experiment's config with kernel attribution on (the workflow's own
rules: perf on this host, executed blocks under QEMU), then tabulate, per device x variant x
phase, the SME2 kernels' share of the engine's code and the SME2 kernels that ran.

    python benchmarks/kernel_attribution.py --config config/emulated-sme2.yaml \\
        --devices host,qemu-no-sme,qemu-sme2-vl512 --models synth-tiny
    python benchmarks/kernel_attribution.py --config config/host-sme2.yaml \\
        --mnn /path/to/MNN --allow-dirty --repetitions 3 --workdir /tmp/host-attr
    python benchmarks/kernel_attribution.py --config config/emulated-vision.yaml \\
        --mnn /path/to/MNN --kleidiai file:///path/to/kleidiai-v1.16.0.tar.gz --name emulated-vision

For a model with a vision encoder it also tabulates the vision phase's timings (bench.csv: the
image encoder, the image prompt's prefill, the time to the first token), per device x variant.

A workdir of an earlier run of the same command is resumed (Snakemake reruns nothing that is
done). Writes benchmarks/results/kernel_attribution[-<name>].{json,md}.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from provenance import write_results  # noqa: E402

from mnnrepro.analysis.attribution import phase_summary  # noqa: E402
from mnnrepro.phases import VISION_PHASES  # noqa: E402


def derived_config(args) -> dict:
    cfg = yaml.safe_load((ROOT / args.config).read_text())
    if args.devices:
        cfg["devices"] = {d: cfg["devices"][d] for d in args.devices.split(",")}
    if args.models:
        cfg["models"] = {m: cfg["models"][m] for m in args.models.split(",")}
    if args.mnn:
        cfg["mnn"]["source"] = {"path": str(Path(args.mnn).resolve())}
        if args.allow_dirty:
            cfg["mnn"]["source"]["allow_dirty"] = True
    if args.kleidiai:  # a mirror of the pinned tarball (the same md5 is checked)
        cfg["mnn"]["kleidiai"]["url"] = args.kleidiai
    if args.repetitions:
        cfg["bench"]["repetitions"] = args.repetitions
    cfg["bench"]["quiet_timeout_s"] = 0  # measure the load and mark it, never wait
    cfg["attribution"] = {**cfg.get("attribution", {}), "enabled": True}
    return cfg


def vision_timings(bench: pd.DataFrame) -> pd.DataFrame:
    """Per device x model x variant x vision phase: repetitions and the medians of seconds,
    tokens and pixels (the sums over the image set of one invocation)."""
    rows = bench[bench["phase"].isin(VISION_PHASES)]
    return (
        rows.groupby(["device", "model", "variant", "phase"], as_index=False)
        .agg(
            repetitions=("seconds", "size"),
            seconds=("seconds", "median"),
            tokens=("tokens", "median"),
            pixels_mp=("pixels_mp", "median"),
        )
        .sort_values(["device", "model", "phase", "variant"])
    )


def vision_lines(vision: pd.DataFrame) -> list[str]:
    if vision.empty:
        return []
    return [
        "",
        "The vision phase's timings (bench.csv, medians over the timed repetitions; each sums "
        "the image set of one invocation: `vision` = the image encoder by MNN's own timer, "
        "`image_prefill` = the image prompt's prefill, `first_token` = question to first "
        "token). Emulated timings are recorded, never judged.",
        "",
        vision.astype({"tokens": int}).to_markdown(index=False, floatfmt=".4f"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--devices", default="")
    parser.add_argument("--models", default="")
    parser.add_argument("--mnn", default="", help="a local MNN checkout (mnn.source.path)")
    parser.add_argument("--allow-dirty", action="store_true")
    parser.add_argument("--kleidiai", default="", help="URL of the pinned KleidiAI tarball")
    parser.add_argument("--repetitions", type=int, default=0)
    parser.add_argument("--workdir", default="")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--name", default="")
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="kernel-attribution-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = derived_config(args)
    config_path = workdir / "attribution.yaml"
    config_path.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False))
    subprocess.run(
        [
            *(sys.executable, "-m", "snakemake", "--cores", str(args.cores)),
            *("--configfile", str(config_path), "--directory", str(workdir)),
            *("--snakefile", str(ROOT / "Snakefile")),
        ],
        check=True,
    )
    out = workdir / "results" / cfg["experiment"]
    table = pd.read_csv(out / "kernels.csv", keep_default_na=False)
    summary = phase_summary(table)
    sme2 = table[table["sme2_kernel"] & table["engine_library"]]
    top = (
        sme2.groupby(["device", "variant", "phase", "symbol"], as_index=False)["count"]
        .sum()
        .sort_values("count", ascending=False)
    )
    result = {
        "config": args.config,
        "derived_config": cfg,
        "phases": summary.to_dict(orient="records"),
        "sme2_kernels": top.to_dict(orient="records"),
    }
    lines = [
        f"# Kernel attribution: {args.config}",
        "",
        "One profiled invocation per variant and phase (never a timed repetition; prefill = the "
        "benchmark's prompt + 1 generated token, decode = a 1-token prompt + the benchmark's "
        "generated tokens; each includes the model's load), by the workflow's own rule "
        "`profile_kernels`: perf `cpu-clock` samples on this host, executed translation blocks "
        "under QEMU (blocks are not time: one SME2 block does many outer products). "
        "`engine` = samples or blocks in the engine's own libraries.",
        "",
        "| device | model | variant | phase | all | engine | SME2 kernels | SME2 share of engine |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in summary.itertuples():
        share = "-" if pd.isna(row.sme2_share) else f"{row.sme2_share:.2%}"
        lines.append(
            f"| {row.device} | {row.model} | {row.variant} | {row.phase} | {row.total} | "
            f"{row.engine_count} | {row.sme2_count} | {share} |"
        )
    lines += ["", "SME2 kernels that ran (count per device x variant x phase):", ""]
    lines += ["| device | variant | phase | function | count |", "|---|---|---|---|---|"]
    for row in top.head(40).itertuples():
        lines.append(
            f"| {row.device} | {row.variant} | {row.phase} | `{row.symbol}` | {row.count} |"
        )
    if top.empty:
        lines.append("| - | - | - | no SME2 kernel ran | 0 |")
    engine = table[table["engine_library"]]
    best = (
        engine.sort_values("count", ascending=False)
        .groupby(["device", "variant", "phase"], sort=True)
        .head(3)
        .sort_values(["device", "variant", "phase", "count"], ascending=[True, True, True, False])
    )
    result["top_engine_functions"] = best[
        ["device", "variant", "phase", "library", "symbol", "count"]
    ].to_dict(orient="records")
    lines += ["", "The engine's top 3 functions per device x variant x phase:", ""]
    lines += [
        "| device | variant | phase | library | function | count |",
        "|---|---|---|---|---|---|",
    ]
    for row in best.itertuples():
        lines.append(
            f"| {row.device} | {row.variant} | {row.phase} | {row.library} | "
            f"`{row.symbol or '(unresolved)'}` | {row.count} |"
        )
    vision = vision_timings(pd.read_csv(out / "bench.csv"))
    result["vision_phase"] = vision.to_dict(orient="records")
    lines += vision_lines(vision)
    lines += ["", "Command: `measured.command` in the JSON; the config as run: `derived_config`."]
    name = "kernel_attribution" + (f"-{args.name}" if args.name else "")
    write_results(name, result, lines)


if __name__ == "__main__":
    main()
