"""Time the small emulated SME2 check that CI runs (tiny model, host + QEMU without SME + two
SME vector lengths): the pinned fetch of QEMU and the arm64 userland, then the workflow.
With --full, config/emulated-sme2.yaml as shipped (every device and model, kernel attribution
on), and its agreement table and what ran, per device x model x variant.

Usage: python benchmarks/emulated_check_timing.py [--full]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

OUT = ROOT / "benchmarks" / "results"
KEEP = ["host", "qemu-no-sme", "qemu-sme2-vl256", "qemu-sme2-vl512"]  # as the CI test


def snakemake(workdir: Path, config: Path, *targets: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "2",
            "--configfile",
            str(config),
            "--directory",
            str(workdir),
            *targets,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def full_run() -> dict:
    """config/emulated-sme2.yaml as shipped: wall times, and per device x model x variant the
    agreement with `qemu-no-sme` and the SME2 kernels' share of the engine's prefill."""
    import pandas as pd

    sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
    from mnnrepro.analysis.attribution import phase_summary

    workdir = Path(tempfile.mkdtemp(prefix="emulated-full-"))
    config = ROOT / "config" / "emulated-sme2.yaml"
    fetch_s = snakemake(workdir, config, "resources/emulation/userland.json")
    run_s = snakemake(workdir, config)
    out = workdir / "results" / "emulated-sme2"
    table = pd.concat(
        [pd.read_csv(p) for p in sorted((out / "emulation").glob("*.csv"))], ignore_index=True
    )
    shares = phase_summary(pd.read_csv(out / "kernels.csv", keep_default_na=False))
    prefill = shares[shares["phase"] == "prefill"].set_index(["device", "model", "variant"])
    rows = []
    for (device, model, variant), g in table.groupby(["device", "model", "variant"]):
        counts = g["judged"].value_counts()
        key = (device, model, variant)
        share = prefill["sme2_share"].get(key) if key in prefill.index else None
        rows.append(
            {
                "device": device,
                "model": model,
                "variant": variant,
                "vector_length_bits": g["sme_vector_length_bits"].iloc[0],
                "engine_line": g["engine_line"].iloc[0],
                "prompts": len(g),
                **{kind: int(counts.get(kind, 0)) for kind in KINDS},
                "first_top1_difference": g["first_top1_difference"].min(),
                "prefill_sme2_share": None if share is None or pd.isna(share) else float(share),
            }
        )
    return {"fetch_s": round(fetch_s, 1), "workflow_s": round(run_s, 1), "rows": rows}


KINDS = ("identical", "equivalent within rounding", "wrong", "crashed")


def full_markdown(result: dict) -> list[str]:
    lines = [
        "# Emulated SME2 check (config/emulated-sme2.yaml as shipped)",
        "",
        f"The pinned fetch of QEMU and the arm64 userland: {result['fetch_s']} s; the workflow "
        f"(every device, both models, kernel attribution on): {result['workflow_s']} s, on 2 "
        "cores. Greedy answers teacher-forced against `qemu-no-sme`'s (the NEON path of the "
        "same wheel); the SME2 share is of the engine's executed blocks in the profiled "
        "prefill invocation (rule `profile_kernels`).",
        "",
        "| device | model | variant | SME vector length | engine says | prompts | "
        + " | ".join(KINDS)
        + " | first top-1 difference | prefill SME2 share |",
        "|---|---|---|---:|---|---:|" + "---:|" * len(KINDS) + "---:|---:|",
    ]
    for r in result["rows"]:
        vl = r["vector_length_bits"]
        share = r["prefill_sme2_share"]
        first = r["first_top1_difference"]
        lines.append(
            f"| {r['device']} | {r['model']} | {r['variant']} | "
            f"{'-' if vl != vl or vl is None else f'{int(vl)} bits'} | {r['engine_line']} | "
            f"{r['prompts']} | " + " | ".join(str(r[k]) for k in KINDS) + " | "
            f"{'-' if first != first or first is None else f'step {int(first)}'} | "
            f"{'-' if share is None else f'{share:.2%}'} |"
        )
    return lines


def main() -> int:
    if "--full" in sys.argv[1:]:
        result = full_run()
        write_results("emulated_sme2_full", result, full_markdown(result))
        print("\n".join(full_markdown(result)))
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="emulated-timing-"))
    cfg = yaml.safe_load((ROOT / "config/emulated-sme2.yaml").read_text())
    cfg["devices"] = {name: cfg["devices"][name] for name in KEEP}
    cfg["models"] = {"synth-tiny": cfg["models"]["synth-tiny"]}
    cfg["correctness"]["prompts"] = ["你好"]
    config = workdir / "emulated.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    fetch_s = snakemake(workdir, config, "resources/emulation/userland.json")
    run_s = snakemake(workdir, config)
    result = {"fetch_s": round(fetch_s, 1), "workflow_s": round(run_s, 1), "devices": KEEP}
    write_results(
        "emulated_check_timing",
        result,
        (
            "# Emulated SME2 check (the CI-sized run)\n\n"
            f"Devices: {', '.join(KEEP)}; tiny synthetic model; 2 cores.\n\n"
            f"| step | seconds |\n|---|---:|\n| pinned fetch of QEMU + arm64 userland "
            f"(~110 MB) | {result['fetch_s']} |\n"
            f"| the workflow (all rules) | {result['workflow_s']} |"
        ).splitlines(),
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
