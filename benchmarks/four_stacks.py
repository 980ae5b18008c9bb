"""Four SME2 stacks side by side on emulated CPUs: config/emulated-paper.yaml as it is.

Usage:
    python benchmarks/four_stacks.py --workdir DIR --mnn /path/to/MNN-3.6.1 \
        --kleidiai v1.16.0=file:///src/kleidiai-v1.16.0.tar.gz \
        --kleidiai v1.24.0=file:///src/kleidiai-v1.24.0.tar.gz [--cores 2]

It runs config/emulated-paper.yaml through the workflow (`snakemake --cores N`) with only the
MNN checkout (`mnn.source`) and mirrors of the pinned KleidiAI archives given on the command
line (their md5 and sha256 still check them; GitHub is not reachable here): MNN's two builds
and its masked binary, llama.cpp, ONNX Runtime GenAI and ExecuTorch, every pair on QEMU 11
without SME and with SME2 at 128 to 2048 bits, in one run. A rerun in the same working
directory measures only what is missing.

It writes benchmarks/results/four_stacks.{json,md}: per pair and CPU, the correctness gate and
every other validity check the workflow wrote, and per variant and CPU the SME2 kernels that
ran (QEMU's executed blocks). Emulated: correctness and what ran, never speed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from mnn_vector_length import kernels_ran, workdir_of, workflow_parser  # noqa: E402
from provenance import measured_record, write_results  # noqa: E402
from real_mnn import snakemake  # noqa: E402

CONFIG = "config/emulated-paper.yaml"
GATE = "correctness gate"  # how the gate's check is named (analysis/validity)


def pairs_of(config: dict) -> list[tuple[str, str]]:
    comparison = config["comparison"]
    also = [(p["baseline"], p["treatment"]) for p in comparison.get("also", [])]
    return [(comparison["baseline"], comparison["treatment"]), *also]


def stack_of(config: dict, variant: str) -> str:
    """The engine section's kind key (build, llamacpp, ort_genai, executorch) of a variant."""
    engine = config["engines"][config["variants"][variant]["engine"]]
    return next(iter(engine))


def pair_rows(workdir: Path, config: dict, model: str) -> list[dict]:
    """Per pair and device: the gate's verdict and every validity check's."""
    rows = []
    for device in config["devices"]:
        path = workdir / f"results/{config['experiment']}/validity/{device}/{model}.json"
        checks = json.loads(path.read_text())["checks"]
        for baseline, treatment in pairs_of(config):
            mine = [c for c in checks if tuple(c["pair"]) == (baseline, treatment)]
            gate = [c for c in mine if c["name"].startswith(GATE)]
            rows.append(
                {
                    "stack": stack_of(config, treatment),
                    "baseline": baseline,
                    "treatment": treatment,
                    "device": device,
                    "gate": gate[0]["evidence"] if gate else None,
                    "gate_passed": bool(gate) and gate[0]["passed"],
                    "checks": len(mine),
                    "failed": [c["name"] for c in mine if not c["passed"]],
                }
            )
    return rows


def markdown(result: dict) -> list[str]:
    devices = result["devices"]
    out = [
        "# Four SME2 stacks side by side on emulated CPUs (benchmarks/four_stacks.py)",
        "",
        f"Command: `{result['measured']['command']}`; {CONFIG} as it is, with the local MNN "
        "checkout and KleidiAI mirrors (this invocation of the workflow: "
        f"{result['workflow_s']} s; a rerun measures only what is missing). Emulated: "
        "correctness and what ran, never speed.",
        "",
        "## Each pair's checks per CPU",
        "",
        "Per cell: the correctness gate, then how many of the pair's validity checks passed "
        "(the gate, the switch seen by the engine, the SME2 kernels that ran; on the CPU "
        "without SME, the fallback).",
        "",
        "| stack | baseline -> treatment | " + " | ".join(devices) + " |",
        "|---|---|" + "---|" * len(devices),
    ]
    cells: dict[tuple[str, str, str], dict] = {
        (r["baseline"], r["treatment"], r["device"]): r for r in result["pairs"]
    }
    for baseline, treatment in dict.fromkeys(
        (r["baseline"], r["treatment"]) for r in result["pairs"]
    ):
        row = [cells[(baseline, treatment, d)] for d in devices]
        out.append(
            f"| {row[0]['stack']} | {baseline} -> {treatment} | "
            + " | ".join(
                ("gate pass" if c["gate_passed"] else "gate **FAIL**")
                + f", {c['checks'] - len(c['failed'])}/{c['checks']}"
                + (f" (failed: {'; '.join(c['failed'])})" if c["failed"] else "")
                for c in row
            )
            + " |"
        )
    out += [
        "",
        "## SME2 kernel blocks executed in prefill (QEMU's executed blocks)",
        "",
        "| variant | " + " | ".join(devices) + " |",
        "|---|" + "---:|" * len(devices),
    ]
    prefill = {(k["source"], k["device"]): k for k in result["kernels"] if k["phase"] == "prefill"}
    for variant in dict.fromkeys(k["source"] for k in result["kernels"]):
        out.append(
            f"| {variant} | "
            + " | ".join(
                str(prefill[(variant, d)]["sme2_blocks"]) if (variant, d) in prefill else "-"
                for d in devices
            )
            + " |"
        )
    out += ["", "## The SME2 kernels that ran most (prefill, SME2 at 512 bits)", ""]
    for k in result["kernels"]:
        if k["phase"] == "prefill" and k["device"] == "qemu-sme2-vl512" and k["sme2_blocks"]:
            out.append(f"- {k['source']}: {', '.join(k['sme2_kernels_top'])}")
    out += ["", "## The gates' evidence, SME2 at 512 bits", ""]
    for r in result["pairs"]:
        if r["device"] == "qemu-sme2-vl512":
            out.append(f"- {r['baseline']} -> {r['treatment']}: {r['gate']}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = workflow_parser(__doc__.split("\n\n")[0], sources=False)
    parser.add_argument("--mnn", type=Path, required=True, help="a local MNN 3.6.1 checkout")
    args = parser.parse_args(argv)
    workdir = workdir_of(args)
    config = yaml.safe_load((ROOT / CONFIG).read_text())
    mirrors = dict(args.kleidiai)
    overrides = {}
    for section in ("mnn", "llamacpp"):
        version = config[section]["kleidiai"]["version"]
        overrides[section] = (
            {"kleidiai": {"url": mirrors.get(version, "")}} if version in mirrors else {}
        )
    overrides["mnn"]["source"] = {"path": str(args.mnn.resolve())}
    run = snakemake(workdir, CONFIG, overrides["mnn"], args.cores, llamacpp=overrides["llamacpp"])
    (model,) = config["models"]
    result = {
        "workflow_s": run["seconds"],
        "devices": list(config["devices"]),
        "pairs": pair_rows(workdir, config, model),
        "kernels": kernels_ran(workdir, config["experiment"]).to_dict(orient="records"),
    }
    write_results("four_stacks", result, markdown({**result, "measured": measured_record()}))
    return 0 if all(not r["failed"] for r in result["pairs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
