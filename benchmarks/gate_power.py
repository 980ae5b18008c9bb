"""The correctness gate's power, measured: how large an error it misses, and how often it rejects
a difference that is rounding only.

    python benchmarks/gate_power.py [--workdir DIR] [--prompts 24] [--draws 40] [--no-qemu]

Everything runs here, with the prebuilt MNN 3.6.1 engine of the `mnn` wheel and the gate's own
code (`mnnrepro.analysis.correctness.compare_forced`, teacher-forced), under two rules: the
schema's defaults (`GateRule()`: `near_tie_sd`, `max_logit_diff_sd` and the cap
`max_flip_share` on the share of flipped steps) and the same without that cap (the gate before
this measurement; `max_flip_share` 1):

* two synthetic Qwen3 models of the tiny shape (seed 0), exported by llmexport as the workflow
  exports them (4-bit weights, blocks of 64): `random` (as the workflow ships it: random
  weights, small top-1 margins) and `sharpened` (the same weights, the tied embedding / LM-head
  rows of 64 tokens scaled x4, so greedy picks lead their rivals by larger margins, as a trained
  model's do; the median margins of both are measured and reported);
* rounding-only differences, real: the reference is `precision: high`, 1 thread; the same
  model at `precision: low` and `normal`, and with 2 threads, is fed the reference's tokens
  (on this x86 host these compute the same numbers); then, through the workflow's own QEMU
  device and greedy runner (the aarch64 `mnn` wheel in config/emulated-sme2.yaml's pinned
  userland), arm64 NEON (`max,sme=off`) at `precision: low` (FP16) vs `high` (FP32), arm64
  NEON vs this x86 host, and MNN's SME2 kernels at their 512-bit vector length vs NEON; a
  `wrong` verdict there is a false alarm;
* real broken kernels: MNN's SME2 kernels at 128 and 256 bits (written for 512,
  benchmarks/results/real_mnn.md) vs NEON;
* kernel-shaped errors, real: the same checkpoint with one weight damaged before the export,
  as a broken GEMM kernel would compute it: K columns of layer 1's `mlp.down_proj` dropped
  (1, 4 or 16 of its 128 input columns zeroed: a skipped K-block), or that matrix perturbed by
  Gaussian noise of 3 %, 10 % or 30 % of its RMS; exported and run, fed the reference's tokens;
* logit noise, controlled: the reference's own recorded top-k logits with Gaussian noise of k
  of its logit SDs added (k = 0.1 ... 4), `--draws` draws per prompt; the top-1 is re-ranked
  among the recorded top-k (the engine records only those).

Each answer (one prompt, 16 teacher-forced steps) is judged `identical`, `equivalent within
rounding` or `wrong`; the detection rate is the share judged `wrong`. A gate of three prompts
(the configs' `correctness.prompts`) passes only when all three pass: that rate is computed
from consecutive triples of the same answers. Writes benchmarks/results/gate_power.{json,md}.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from emulated import userland_receipt  # noqa: E402
from provenance import write_results  # noqa: E402

from mnnrepro.analysis.correctness import compare_forced  # noqa: E402
from mnnrepro.analysis.divergence import ROUNDING, WRONG, GateRule  # noqa: E402
from mnnrepro.config import VARIANT_SCHEMA, with_schema_defaults  # noqa: E402
from mnnrepro.design import Variant  # noqa: E402
from mnnrepro.devices.qemu import QemuDevice  # noqa: E402
from mnnrepro.engines.registry import EngineRecord  # noqa: E402
from mnnrepro.engines.runner import python_runner as runner  # noqa: E402
from mnnrepro.models.export import export_model  # noqa: E402
from mnnrepro.models.synthetic import make_model  # noqa: E402
from mnnrepro.runs.greedy import run_greedy  # noqa: E402
from mnnrepro.runs.staging import push_receipt  # noqa: E402

REFERENCE_RUNTIME = {"precision": "high", "thread_num": 1}
ROUNDING_RUNTIMES = {
    "precision low": {"precision": "low", "thread_num": 1},
    "precision normal": {"precision": "normal", "thread_num": 1},
    "2 threads": {"precision": "high", "thread_num": 2},
}
DAMAGED = "model.layers.1.mlp.down_proj.weight"
WEIGHT_ERRORS = {
    "1 K column dropped": ("drop", 1),
    "4 K columns dropped": ("drop", 4),
    "16 K columns dropped": ("drop", 16),
    "weight noise 3 %": ("noise", 0.03),
    "weight noise 10 %": ("noise", 0.10),
    "weight noise 30 %": ("noise", 0.30),
}
PREBUILT = EngineRecord.of(
    {"engine": "wheel", "kind": "prebuilt", "pin": "mnn==3.6.1", "version": "3.6.1"}
)
QEMU_CPUS = {
    "qemu-no-sme": "max,sme=off",
    "qemu-sme2-vl128": "max,sme-default-vector-length=16",
    "qemu-sme2-vl256": "max,sme-default-vector-length=32",
    "qemu-sme2-vl512": "max,sme-default-vector-length=64",
}
# (arm, error, device, runtime) judged against (reference device, reference runtime)
EMULATED_ARMS = [
    ("rounding only", "arm64 NEON FP16 vs FP32", "qemu-no-sme", "low", "qemu-no-sme", "high"),
    ("rounding only", "arm64 NEON vs x86 (FP32)", "qemu-no-sme", "high", "host", "high"),
    (
        "rounding only",
        "SME2 at 512 bits vs NEON (FP16)",
        "qemu-sme2-vl512",
        "low",
        "qemu-no-sme",
        "low",
    ),
    (
        "broken kernel",
        "SME2 at 128 bits vs NEON (FP16)",
        "qemu-sme2-vl128",
        "low",
        "qemu-no-sme",
        "low",
    ),
    (
        "broken kernel",
        "SME2 at 256 bits vs NEON (FP16)",
        "qemu-sme2-vl256",
        "low",
        "qemu-no-sme",
        "low",
    ),
]
LOGIT_NOISE_SD = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
SHARPENED_TOKENS, SHARPEN = 64, 4.0
MAX_NEW_TOKENS = 16
WORDS = ("the", "a", "matrix", "of", "SME2", "kernel", "phone", "engine", "token", "model", "fast")


def prompts(n: int) -> list[str]:
    rng = random.Random(0)
    fixed = ["你好", "Briefly explain what a matrix multiplication is.", "1 2 3 4 5 6 7 8"]
    return (fixed + [" ".join(rng.choices(WORDS, k=rng.randint(2, 9))) for _ in range(n)])[:n]


def checkpoint(workdir: Path, margins: str, error: tuple[str, float] | None) -> Path:
    """The tiny seed-0 checkpoint, sharpened or not, with one weight damaged or none."""
    import torch
    from transformers import AutoModelForCausalLM

    name = margins + ("" if error is None else f"-{error[0]}-{error[1]:g}")
    out = workdir / "hf" / name
    if out.is_dir():
        return out
    base = workdir / "hf" / "base"
    if not base.is_dir():
        make_model("tiny", 0, base)
    model = AutoModelForCausalLM.from_pretrained(base)
    state = model.state_dict()
    with torch.no_grad():
        if margins == "sharpened":  # tied: the embedding is the LM head
            rows = torch.randperm(state["lm_head.weight"].shape[0], generator=seeded(1))
            model.get_input_embeddings().weight[rows[:SHARPENED_TOKENS]] *= SHARPEN
        if error is not None:
            weight = dict(model.named_parameters())[DAMAGED]
            kind, size = error
            if kind == "drop":  # a GEMM that skips input columns [0, size) of K
                weight[:, : int(size)] = 0
            else:
                rms = weight.pow(2).mean().sqrt()
                weight += torch.randn(weight.shape, generator=seeded(2)) * rms * size
    tmp = Path(tempfile.mkdtemp(dir=out.parent.parent, prefix=".hf-"))
    model.save_pretrained(tmp)
    for extra in base.iterdir():  # the tokenizer's files, as make_model wrote them
        if not (tmp / extra.name).exists():
            shutil.copy(extra, tmp)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)
    return out


def seeded(seed: int):
    import torch

    return torch.Generator().manual_seed(seed)


def exported(workdir: Path, hf: Path) -> Path:
    out = workdir / "mnn" / hf.name
    if not (out / "config.json").is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(workdir / "export.log", "a") as log:
            export_model(str(hf), str(out), 4, 64, log)
    return out / "config.json"


def answers(config: Path, runtime: dict, texts: list[str], forced=None) -> list[dict]:
    llm, _ = runner.load_llm(str(config), runtime)
    forced = forced or [None] * len(texts)
    out = [
        runner.greedy_answer(llm, text, MAX_NEW_TOKENS, f)
        for text, f in zip(texts, forced, strict=True)
    ]
    del llm
    return out


def emulated(workdir: Path) -> dict[str, QemuDevice]:
    """The workflow's QEMU devices, in the pinned userland of config/emulated-sme2.yaml."""
    receipt = userland_receipt(workdir)
    return {n: QemuDevice(n, {"userland": str(receipt), "cpu": c}) for n, c in QEMU_CPUS.items()}


def device_answers(device, model_dir: Path, precision: str, texts, forced=None) -> list[dict]:
    """Greedy answers through the workflow's own runner on a device (staged, verified)."""
    receipt = push_receipt(device, {"mnn": str(model_dir)}, model_dir.name)
    spec = {"engine": "wheel", "runtime": {"precision": precision, "thread_num": 1}}
    variant = Variant.of("v", with_schema_defaults(spec, *VARIANT_SCHEMA))
    payload = run_greedy(
        device, receipt, PREBUILT, variant, texts, MAX_NEW_TOKENS, 3600, forced=forced
    )
    return payload["answers"]


def top1_margins_sd(reference: list[dict]) -> list[float]:
    return [
        (step["top"][0][1] - step["top"][1][1]) / step["sd"]
        for answer in reference
        for step in answer["steps"]
        if step.get("sd") and len(step["top"]) > 1
    ]


def with_logit_noise(answer: dict, k: float, rng: random.Random) -> dict:
    steps = []
    for step in answer["steps"]:
        noisy = [[t, v + rng.gauss(0.0, k * step["sd"])] for t, v in step["top"]]
        steps.append({**step, "top": sorted(noisy, key=lambda tv: -tv[1])})
    return {
        "tokens": [s["top"][0][0] for s in steps],
        "steps": steps,
        "forced_tokens": list(answer["tokens"]),
    }


RULES = {"defaults": GateRule(), "no flip cap": GateRule(max_flip_share=1.0)}


def tally(rows: list[dict]) -> dict:
    n = len(rows)
    wrong = sum(r["kind"] == WRONG for r in rows)
    rounding = [r for r in rows if r["kind"] == ROUNDING]
    triples = [rows[i : i + 3] for i in range(0, n - n % 3, 3)]
    return {
        "answers": n,
        "identical": sum(r["kind"] == "identical" for r in rows),
        "rounding": len(rounding),
        "wrong": wrong,
        "other": n - wrong - len(rounding) - sum(r["kind"] == "identical" for r in rows),
        "detected": wrong / n if n else None,
        "gates_of_3": len(triples),
        "gates_failed": sum(any(r["kind"] == WRONG for r in t) for t in triples),
        "max_flipped_share_passed": max(
            (r["differing_steps"] / r["steps_compared"] for r in rounding), default=0.0
        ),
        "max_logit_diff_sd": max(
            (r["max_logit_diff_sd"] for r in rows if r["max_logit_diff_sd"] is not None),
            default=None,
        ),
    }


def measure(workdir: Path, n_prompts: int, draws: int, qemu: bool) -> dict:
    texts = prompts(n_prompts)
    devices = emulated(workdir) if qemu else {}
    rows = []
    margins = {}
    for margin in ("random", "sharpened"):
        ref_config = exported(workdir, checkpoint(workdir, margin, None))
        reference = answers(ref_config, REFERENCE_RUNTIME, texts)
        forced = [a["tokens"] for a in reference]
        margins[margin] = median(top1_margins_sd(reference))

        def judge(arm, error, candidates, references, margin=margin):
            for rule_name, rule in RULES.items():
                judged = [
                    compare_forced(r, c, rule) for r, c in zip(references, candidates, strict=True)
                ]
                rows.append(
                    {"model": margin, "arm": arm, "error": error, "rule": rule_name} | tally(judged)
                )

        for name, runtime in ROUNDING_RUNTIMES.items():
            judge("rounding only", name, answers(ref_config, runtime, texts, forced), reference)
        for name, error in WEIGHT_ERRORS.items():
            config = exported(workdir, checkpoint(workdir, margin, error))
            candidates = answers(config, REFERENCE_RUNTIME, texts, forced)
            judge("weight error", name, candidates, reference)
        if margin == "random" and devices:
            model_dir = ref_config.parent
            own = {("host", "high"): reference}
            for arm, error, dev, precision, ref_dev, ref_precision in EMULATED_ARMS:
                if (ref_dev, ref_precision) not in own:
                    own[ref_dev, ref_precision] = device_answers(
                        devices[ref_dev], model_dir, ref_precision, texts
                    )
                base = own[ref_dev, ref_precision]
                fed = [a["tokens"] for a in base]
                candidates = device_answers(devices[dev], model_dir, precision, texts, fed)
                judge(arm, error, candidates, base)
        rng = random.Random(0)
        for k in LOGIT_NOISE_SD:
            noisy = [with_logit_noise(a, k, rng) for _ in range(draws) for a in reference]
            judge("logit noise", f"{k:g} SD", noisy, reference * draws)
    return {
        "prompts": texts,
        "draws": draws,
        "rules": {name: vars(rule) for name, rule in RULES.items()},
        "median_top1_margin_sd": margins,
        "rows": rows,
    }


def pct(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def markdown(result: dict) -> list[str]:
    m = result["median_top1_margin_sd"]
    lines = [
        "# The correctness gate's power (benchmarks/gate_power.py)",
        "",
        f"{len(result['prompts'])} prompts, 16 teacher-forced steps each, judged by the "
        f"gate's code under two rules: `defaults` {result['rules']['defaults']} and "
        f"`no flip cap` (the rule before this measurement). Median top-1 margin of the "
        "reference's "
        f"greedy steps: {m['random']:.2f} logit SDs (`random`), {m['sharpened']:.2f} "
        "(`sharpened`). Logit noise: "
        f"{result['draws']} draws per prompt. `detected` = answers judged `wrong`; a gate of 3 "
        "prompts fails when any of its 3 is `wrong` (consecutive triples of the same answers). "
        "`largest passed flip share` = the most steps flipped in an answer still judged "
        "`equivalent within rounding`.",
        "",
        "| model | arm | error | rule | answers | identical | within rounding | wrong "
        "| detected | gates of 3 failed | largest passed flip share | max logit diff (SD) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        diff = "-" if r["max_logit_diff_sd"] is None else f"{r['max_logit_diff_sd']:.3g}"
        lines.append(
            f"| {r['model']} | {r['arm']} | {r['error']} | {r['rule']} | {r['answers']} "
            f"| {r['identical']} "
            f"| {r['rounding']} | {r['wrong']} | {pct(r['detected'])} | "
            f"{r['gates_failed']}/{r['gates_of_3']} | {pct(r['max_flipped_share_passed'])} "
            f"| {diff} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="", help="kept and reused (models are cached)")
    parser.add_argument("--prompts", type=int, default=24)
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument(
        "--no-qemu", action="store_true", help="skip the emulated arms (no Debian archive)"
    )
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gate-power-"))
    workdir.mkdir(parents=True, exist_ok=True)
    result = measure(workdir, args.prompts, args.draws, not args.no_qemu)
    write_results("gate_power", result, markdown(result))
    print("\n".join(markdown(result)))


if __name__ == "__main__":
    main()
