"""ONNX Runtime's KleidiAI pair at every streaming vector length, beside llama.cpp's and MNN's.

Usage:
    python benchmarks/ort_emulated.py --workdir DIR \
        --kleidiai v1.24.0=file:///src/kleidiai-v1.24.0.tar.gz [--cores 2]

It runs through the workflow (`snakemake --cores N`) config/emulated-paper.yaml's two control
engines, each switched at run time in one binary, on config/emulated-paper.yaml's emulated CPUs
(QEMU 11 without SME, and with SME2 at 128, 256, 512, 1024 and 2048 bits): ONNX Runtime GenAI
(the pinned linux-arm64 wheels, `mlas.disable_kleidiai` "1" vs not) and llama.cpp (its pinned
sdist with KleidiAI v1.24.0, cross-built for linux-arm64, `GGML_KLEIDIAI_SME=0` vs not), on the
same synthetic Qwen3 checkpoint; MNN's two builds are left out (they need MNN's source, which
this network cannot fetch): MNN 3.6.1's SME2 build at the same vector lengths is cited from
benchmarks/results/mnn_vector_length.json, as it was measured there. `--kleidiai` gives a
mirror of the KleidiAI tag's archive (the config's md5 and sha256 still check it): GitHub is
not reachable here. The config is written, with those changes only, to
<workdir>/ort-emulated.yaml; a rerun in the same working directory measures only what is
missing.

It writes benchmarks/results/ort_emulated.{json,md}: per engine pair and CPU the correctness
gate (treatment vs baseline on that CPU, teacher-forced), per variant and CPU the agreement with
its own answers on the CPU without SME, and per variant, CPU and phase the executed blocks of
the SME2 kernels (QEMU's block log; ONNX Runtime's stripped library named from its kernel
tables).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from mnn_vector_length import agreement, kernels_ran, workdir_of, workflow_parser  # noqa: E402
from provenance import measured_record, write_results  # noqa: E402
from real_mnn import snakemake  # noqa: E402

EXPERIMENT = "ort-emulated"
MODEL = "synth-tiny"
PAIRS = {"ort": ("ort-no-kleidiai", "ort-default"), "llama": ("llama-sme-off", "llama-default")}
MNN = ROOT / "benchmarks/results/mnn_vector_length.json"
MNN_SOURCE = "mnn-361"  # MNN 3.6.1 with MNN_SME2=ON, as the article builds it


def derived_config(mirrors: dict[str, str]) -> dict:
    """config/emulated-paper.yaml without MNN's builds (and their pairs), the KleidiAI mirror."""
    config = yaml.safe_load((ROOT / "config/emulated-paper.yaml").read_text())
    config["experiment"] = EXPERIMENT
    config.pop("mnn")
    config["engines"] = {name: config["engines"][name] for name in PAIRS}
    variants = [v for pair in PAIRS.values() for v in pair]
    config["variants"] = {name: config["variants"][name] for name in variants}
    (ort_base, ort_treat), (llama_base, llama_treat) = PAIRS["ort"], PAIRS["llama"]
    config["comparison"].update(baseline=ort_base, treatment=ort_treat)
    config["comparison"]["also"] = [{"baseline": llama_base, "treatment": llama_treat}]
    pin = config["llamacpp"]["kleidiai"]
    if pin["version"] in mirrors:
        pin["url"] = mirrors[pin["version"]]
    return config


def pair_gates(workdir: Path, devices: list[str]) -> list[dict]:
    """Per engine pair and device: the correctness gate's verdict (validity/<device>)."""
    rows = []
    for device in devices:
        path = workdir / f"results/{EXPERIMENT}/validity/{device}/{MODEL}.json"
        for check in json.loads(path.read_text())["checks"]:
            if not check["name"].startswith("correctness gate"):
                continue
            prompts = check["details"]["prompts"]
            rows.append(
                {
                    "pair": " vs ".join(reversed(check["pair"])),
                    "device": device,
                    "passed": check["passed"],
                    "judged": [p["kind"] for p in prompts],
                    "flipped_steps": sum(p.get("differing_steps") or 0 for p in prompts),
                    "steps": sum(p.get("steps_compared") or 0 for p in prompts),
                }
            )
    return rows


def mnn_cited() -> dict:
    """MNN 3.6.1's SME2 build at the same vector lengths, as mnn_vector_length.json has it."""
    result = json.loads(MNN.read_text())
    return {
        "measured": result["measured"],
        "agreement": [r for r in result["agreement"] if r["source"] == MNN_SOURCE],
        "kernels": [r for r in result["kernels"] if r["source"] == MNN_SOURCE],
    }


def vl_text(bits) -> str:
    return f"{int(bits)} bits" if bits else "no SME"


def markdown(result: dict) -> list[str]:
    mnn = result["mnn"]
    out = [
        "# ONNX Runtime's KleidiAI pair at every streaming vector length, beside llama.cpp's "
        "and MNN's (benchmarks/ort_emulated.py)",
        "",
        f"Command: `{result['measured']['command']}`; the config as run: "
        "config/emulated-paper.yaml's ONNX Runtime and llama.cpp engines and pairs (MNN's builds "
        "left out: their source is not reachable here), the KleidiAI mirror above (this "
        f"invocation of the workflow: {result['workflow_s']} s). MNN 3.6.1's SME2 build is cited "
        f"from benchmarks/results/mnn_vector_length.json (measured {mnn['measured']['date']} at "
        f"commit {mnn['measured']['commit']}). Emulated: correctness and what ran, never speed.",
        "",
        "## Each pair's correctness gate, per CPU",
        "",
        "The treatment fed the baseline's tokens on the same CPU, every step judged (identical "
        "/ rounding: a near-tie swapped / wrong), per prompt.",
        "",
        "| pair | device | gate | per prompt | top-1 differences / steps |",
        "|---|---|---|---|---:|",
    ]
    for row in result["gates"]:
        out.append(
            f"| {row['pair']} | {row['device']} | {'pass' if row['passed'] else '**FAIL**'} | "
            f"{', '.join(row['judged'])} | {row['flipped_steps']}/{row['steps']} |"
        )
    out += [
        "",
        "## Agreement with the same variant on the CPU without SME",
        "",
        "| variant | device | vector length | identical | rounding | wrong | crashed | "
        "largest logit difference (SDs) | the engine printed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    rows = [
        *result["agreement"],
        *({**r, "source": "MNN 3.6.1 SME2 ON (cited)"} for r in mnn["agreement"]),
    ]
    for row in rows:
        drift = row["max_logit_diff_sd"]
        sd = "-" if drift is None or drift != drift else f"{drift:.3g}"
        n = row["prompts"]
        out.append(
            f"| {row['source']} | {row['device']} | {vl_text(row['vector_length_bits'])} | "
            f"{row['identical']}/{n} | {row['rounding']}/{n} | {row['wrong']}/{n} | "
            f"{row['crashed']}/{n} | {sd} | {row['engine_line']} |"
        )
    out += [
        "",
        "## Which SME2 kernels ran (QEMU's executed blocks in the engine's libraries)",
        "",
        "| variant | device | phase | engine blocks | SME2 kernel blocks | top SME2 kernels |",
        "|---|---|---|---:|---:|---|",
    ]
    kernels = [
        *result["kernels"],
        *({**r, "source": "MNN 3.6.1 SME2 ON (cited)"} for r in mnn["kernels"]),
    ]
    for row in kernels:
        out.append(
            f"| {row['source']} | {row['device']} | {row['phase']} | {row['engine_blocks']} | "
            f"{row['sme2_blocks']} | {', '.join(row['sme2_kernels_top']) or '-'} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    args = workflow_parser(__doc__.split("\n\n")[0], sources=False).parse_args(argv)
    workdir = workdir_of(args)
    config = derived_config(dict(args.kleidiai))
    config_path = workdir / "ort-emulated.yaml"
    config_path.write_text(yaml.safe_dump(config, allow_unicode=True))
    run = snakemake(workdir, str(config_path), None, args.cores)
    result = {
        "workflow_s": run["seconds"],
        "gates": pair_gates(workdir, sorted(config["devices"])),
        "agreement": agreement(workdir, EXPERIMENT).to_dict(orient="records"),
        "kernels": kernels_ran(workdir, EXPERIMENT).to_dict(orient="records"),
        "mnn": mnn_cited(),
    }
    write_results("ort_emulated", result, markdown({**result, "measured": measured_record()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
