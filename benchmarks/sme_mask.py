"""The SME mask against each stack's own switch, on an emulated SME2 CPU.

Usage:
    python benchmarks/sme_mask.py --workdir DIR --source mnn=/path/to/MNN-3.6.1 \
        --kleidiai v1.16.0=file:///src/kleidiai-v1.16.0.tar.gz \
        --kleidiai v1.24.0=file:///src/kleidiai-v1.24.0.tar.gz [--cores 2]

It runs through the workflow (`snakemake --cores N`) config/emulated-paper.yaml's three stacks on
its CPU without SME and its SME2 CPU at 512 bits (the length MNN's SME2 kernels are written
for), each stack as three variants of one binary: SME off by its own switch (MNN 3.6.1's ON
build with MNN_CPU_TARGET=2, llama.cpp's GGML_KLEIDIAI_SME=0, ONNX Runtime's session option
mlas.disable_kleidiai), SME hidden by the SME mask (`hide_sme`), and the default. MNN's OFF build
is left out (the pairs here are one binary each). `--source mnn=` is a local MNN 3.6.1 checkout;
`--kleidiai` gives mirrors of the pinned KleidiAI archives (their md5 and sha256 still check
them): GitHub is not reachable here. The config is written, with those changes only, to
<workdir>/sme-mask.yaml; a rerun in the same working directory measures only what is missing.

It writes benchmarks/results/sme_mask.{json,md}: per stack, whether the mask agrees with the
stack's own switch on the SME2 CPU, i.e. both pairs' checks pass (SME off in the baseline only,
the engine's own view, the SME2 kernels that ran: the default's in prefill, none in the switched
or masked baseline), and the switched and masked baselines give the same answers (greedy token
ids, and the top logits' largest difference).
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

from mnnrepro.analysis.correctness import compare_answers  # noqa: E402
from mnnrepro.analysis.divergence import GateRule  # noqa: E402
from mnnrepro.config import with_schema_defaults  # noqa: E402
from mnnrepro.sections import Correctness  # noqa: E402

EXPERIMENT = "sme-mask"
MODEL = "synth-tiny"
SME2_CPU = "qemu-sme2-vl512"
DEVICES = ("qemu-no-sme", SME2_CPU)  # the reference CPU, and the SME2 CPU the checks read
# stack -> (its engine, the variant its own switch turns SME off in, the masked one, default)
STACKS = {
    "MNN 3.6.1 (MNN_SME2=ON)": ("sme2-on", "sme2-on-masked", "sme2-on-hidden", "sme2-on"),
    "llama.cpp (KleidiAI)": ("llama", "llama-sme-off", "llama-sme-hidden", "llama-default"),
    "ONNX Runtime GenAI (MLAS, KleidiAI)": (
        "ort",
        "ort-no-kleidiai",
        "ort-sme-hidden",
        "ort-default",
    ),
}


def derived_config(sources: dict[str, str], mirrors: dict[str, str]) -> dict:
    """config/emulated-paper.yaml with the stacks' three variants each, on two CPUs, profiled on
    the SME2 one; the local MNN checkout and the KleidiAI mirrors."""
    config = yaml.safe_load((ROOT / "config/emulated-paper.yaml").read_text())
    config["experiment"] = EXPERIMENT
    config["mnn"]["source"] = {"path": str(Path(sources["mnn"]).resolve())}
    for pin in (config["mnn"]["kleidiai"], config["llamacpp"]["kleidiai"]):
        pin["url"] = mirrors.get(pin["version"], pin["url"])
    config["engines"] = {name: config["engines"][name] for name, *_ in STACKS.values()}
    config["devices"] = {name: config["devices"][name] for name in DEVICES}
    variants = sorted({v for _, *three in STACKS.values() for v in three})
    config["variants"] = {name: config["variants"][name] for name in variants}
    pairs = []
    for _, switched, hidden, default in STACKS.values():
        pairs += [(switched, default), (hidden, default)]
    (base, treat), *also = pairs
    config["comparison"].update(baseline=base, treatment=treat)
    config["comparison"]["also"] = [{"baseline": b, "treatment": t} for b, t in also]
    config["attribution"]["devices"] = [SME2_CPU]
    config["bench"]["warmup"] = 0  # emulated timings are never judged
    return config


def pair_checks(workdir: Path) -> dict[tuple[str, str], list[dict]]:
    """(baseline, treatment) -> every validity check of the pair on the SME2 CPU."""
    path = workdir / f"results/{EXPERIMENT}/validity/{SME2_CPU}/{MODEL}.json"
    checks: dict[tuple[str, str], list[dict]] = {}
    for check in json.loads(path.read_text())["checks"]:
        checks.setdefault(tuple(check["pair"]), []).append(check)
    return checks


def same_answers(greedy: dict, switched: str, hidden: str, correctness: dict) -> dict:
    """The masked variant's answers judged against the switched one's by the gate's own rule
    (analysis/correctness.compare_answers, free-running: identical, or a first divergence at a
    near-tie of both, `equivalent within rounding`), per prompt."""
    gate = Correctness.of(with_schema_defaults(correctness, "properties", "correctness"))
    result = compare_answers(
        greedy[switched], greedy[hidden], gate.min_agreement, GateRule.of(gate)
    )
    return {"passed": result["passed"], "judged": [row["kind"] for row in result["prompts"]]}


def stack_rows(workdir: Path, correctness: dict) -> list[dict]:
    checks = pair_checks(workdir)
    greedy = json.loads(
        (workdir / f"results/{EXPERIMENT}/greedy/{SME2_CPU}/{MODEL}.json").read_text()
    )
    rows = []
    for stack, (_, switched, hidden, default) in STACKS.items():
        own, mask = checks[(switched, default)], checks[(hidden, default)]
        answers = same_answers(greedy, switched, hidden, correctness)
        rows.append(
            {
                "stack": stack,
                "switched": switched,
                "hidden": hidden,
                "default": default,
                "switch_checks": [{k: c[k] for k in ("name", "passed", "evidence")} for c in own],
                "mask_checks": [{k: c[k] for k in ("name", "passed", "evidence")} for c in mask],
                "answers": answers,
                "agrees": all(c["passed"] for c in own + mask) and answers["passed"],
            }
        )
    return rows


def markdown(result: dict) -> list[str]:
    out = [
        "# The SME mask against each stack's own switch (benchmarks/sme_mask.py)",
        "",
        f"Command: `{result['measured']['command']}`; config/emulated-paper.yaml's three stacks, "
        f"each one binary run three ways, on QEMU 11 without SME and with SME2 at 512 bits "
        f"(this invocation of the workflow: {result['workflow_s']} s). Emulated: correctness "
        "and what ran, never speed.",
        "",
        "| stack | own switch (baseline) | SME mask (baseline) | checks of both pairs "
        "| masked answers vs switched, per prompt (the gate's rule) | agrees |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["stacks"]:
        checks = row["switch_checks"] + row["mask_checks"]
        failed = [c["name"] for c in checks if not c["passed"]]
        answers = row["answers"]
        judged = ", ".join(answers["judged"]) + ("" if answers["passed"] else " (**fails**)")
        out.append(
            f"| {row['stack']} | {row['switched']} | {row['hidden']} | "
            f"{len(checks) - len(failed)}/{len(checks)} pass"
            + (f" (failed: {'; '.join(failed)})" if failed else "")
            + f" | {judged} | {'yes' if row['agrees'] else '**no**'} |"
        )
    out += [
        "",
        "## Which SME2 kernels ran on the SME2 CPU (QEMU's executed blocks)",
        "",
        "| variant | phase | engine blocks | SME2 kernel blocks | top SME2 kernels |",
        "|---|---|---:|---:|---|",
    ]
    for row in result["kernels"]:
        out.append(
            f"| {row['source']} | {row['phase']} | {row['engine_blocks']} | "
            f"{row['sme2_blocks']} | {', '.join(row['sme2_kernels_top']) or '-'} |"
        )
    out += ["", "## Each check's evidence", ""]
    for row in result["stacks"]:
        for check in row["switch_checks"] + row["mask_checks"]:
            mark = "pass" if check["passed"] else "FAIL"
            out.append(f"- {row['stack']}, {check['name']}: {mark}. {check['evidence']}")
    return out


def main(argv: list[str] | None = None) -> int:
    args = workflow_parser(__doc__.split("\n\n")[0]).parse_args(argv)
    workdir = workdir_of(args)
    config = derived_config(dict(args.source), dict(args.kleidiai))
    config_path = workdir / "sme-mask.yaml"
    config_path.write_text(yaml.safe_dump(config, allow_unicode=True))
    run = snakemake(workdir, str(config_path), None, args.cores)
    result = {
        "workflow_s": run["seconds"],
        "stacks": stack_rows(workdir, config["correctness"]),
        "kernels": kernels_ran(workdir, EXPERIMENT).to_dict(orient="records"),
    }
    write_results("sme_mask", result, markdown({**result, "measured": measured_record()}))
    return 0 if all(row["agrees"] for row in result["stacks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
