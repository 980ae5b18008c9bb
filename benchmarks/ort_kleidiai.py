"""ONNX Runtime's KleidiAI switch, checked before it becomes an engine kind (issue 62's facts).

    python benchmarks/ort_kleidiai.py [--workdir DIR]

Everything here is real: the pinned PyPI wheels of onnxruntime 1.32.0 and onnxruntime-genai
0.18.0 (cp311, manylinux_2_28, aarch64 and x86_64; sha256-checked downloads), and the aarch64
ones run in the workflow's own emulated device (QEMU user mode in the pinned arm64 userland of
config/emulated-sme2.yaml, mnnrepro.devices.qemu.QemuDevice). It reports:

* what the libraries carry: the KleidiAI kernel-table names (`kai_run_*`, by SME2, SME and
  other) in each architecture's stripped libonnxruntime.so, the session option
  `mlas.disable_kleidiai`, the newest GLIBC symbol version it needs;
* that both wheels import in the emulated userland, and what genai's model builder (its
  source, in the wheel) maps and imports: Qwen3ForCausalLM, onnx_ir, torch, transformers;
* which code one int4 MatMulNBits (block 32, accuracy level 4: the KleidiAI path, as genai's
  builder writes a model's MatMuls) runs, with KleidiAI on and off (`mlas.disable_kleidiai`),
  on an emulated CPU without SME (`max,sme=off`) and with SME2 at every streaming vector
  length from 128 to 2048 bits: the translated blocks that hold SME instructions (QEMU
  `-d in_asm`: `smstart`, outer products `*mopa`), and the output's largest difference from
  KleidiAI's NEON kernels on the same weights and input;
* the same question asked of a whole model through genai: the workflow's tiny synthetic Qwen3
  checkpoint (mnnrepro.models.synthetic, seed 0) converted by genai's own model builder to int4
  for the CPU (run on this host from the x86_64 wheel, with the pinned onnx_ir wheel it
  imports), then 24 greedy tokens after a 16-token prompt in the emulated userland through
  genai's Python API, `mlas.disable_kleidiai` given as a session option in a config overlay:
  the SME code it ran, the first step's largest logit difference from KleidiAI's NEON kernels,
  and the first generated token where its answer departs from theirs.

Writes benchmarks/results/ort_kleidiai.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from emulated import userland_receipt  # noqa: E402
from provenance import write_results  # noqa: E402

from mnnrepro.devices.qemu import QemuDevice  # noqa: E402
from mnnrepro.fetch import download  # noqa: E402
from mnnrepro.unpack import safe_extract_zip  # noqa: E402

FILES = "https://files.pythonhosted.org/packages"
# (wheel, architecture) -> (address, sha256): PyPI's simple index, 2026-12-05
WHEELS = {
    ("onnxruntime", "aarch64"): (
        f"{FILES}/b7/30/103820b32e9dc1d1fcfc5b519fd2de5bd699d25a25895caf5d726350d1b5/"
        "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl",
        "2303372a85299b6757b0e11e1cbf13e410ddf7e10c37f4b37e99d1c90e7daf7c",
    ),
    ("onnxruntime", "x86_64"): (
        f"{FILES}/1d/46/e6f356c9539d2eed44126de3421a81e217da2ad91b22dc11b379cb1e384f/"
        "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d",
    ),
    ("onnxruntime_genai", "aarch64"): (
        f"{FILES}/e9/6e/33f4a61a8116512531659cde67a0ac20844bcee5968047d4a1f9003c2d3d/"
        "onnxruntime_genai-0.18.0-cp311-cp311-manylinux_2_28_aarch64.whl",
        "5cba84b83dcf658ebc3e124af98d6d0d3d3ccb40e9aedf7633486e95c9b7b713",
    ),
    ("onnxruntime_genai", "x86_64"): (
        f"{FILES}/3c/cb/d3fe096d4447098d934070fccf52d3a5d557d6a96b29358b791bad184ef2/"
        "onnxruntime_genai-0.18.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "af9e2a4efb447feea2cfa10e24aedef1e4f01635c00f6cca759ee13254ee27db",
    ),
}
ONNX_IR = (  # genai's model builder imports it; PyPI's simple index, 2026-12-05
    f"{FILES}/eb/80/1a63440081d94e25b96be6b29119f41119fe5c9521063edbdb7baeeb9589/"
    "onnx_ir-1.1.0-py3-none-any.whl",
    "76cc313a788c073b75271c1b6abb172aaf90fcc6335ed40f9f3238b2064a2fa3",
)
PROMPT = [5, 17, 33, 101, 250, 7, 9, 400, 12, 13, 14, 15, 16, 600, 601, 3]
NEW_TOKENS = 24
# the emulated CPUs: no SME, then SME2 at each streaming vector length (QEMU takes bytes)
CPUS = {"no SME (max,sme=off)": "max,sme=off"} | {
    f"SME2 at {bits} bits": f"max,sme-default-vector-length={bits // 8}"
    for bits in (128, 256, 512, 1024, 2048)
}
K, N, BLOCK, ROWS = 256, 256, 32, 64  # one MatMulNBits: N x K int4 weights, ROWS input rows
SME_CODE = re.compile(rb"\bsmstart\b|mopa\b")
# one translated block in QEMU's -d in_asm log: from an "IN:" line to the blank line after it
BLOCK_TEXT = re.compile(rb"^IN:.*?(?:\n\n|\Z)", re.S | re.M)

RUN = """
import sys, numpy as np, onnxruntime as ort
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.add_session_config_entry("mlas.disable_kleidiai", sys.argv[2])
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
np.save(sys.argv[4], session.run(None, {"A": np.load(sys.argv[3])})[0])
"""
GENERATE = """
import json, sys
import numpy as np
import onnxruntime_genai as og
model_dir, disable, out, prompt, new = sys.argv[1:6]
prompt = json.loads(prompt)
config = og.Config(model_dir)
options = {"mlas.disable_kleidiai": disable, "intra_op_num_threads": 1}
config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
model = og.Model(config)
params = og.GeneratorParams(model)
params.set_search_options(do_sample=False, max_length=len(prompt) + int(new))
generator = og.Generator(model, params)
generator.append_tokens(np.array([prompt], dtype=np.int32))
first = np.array(generator.get_logits()).reshape(-1)
tokens = []
while not generator.is_done():
    generator.generate_next_token()
    tokens.append(int(generator.get_next_tokens()[0]))
json.dump({"tokens": tokens, "first_logits": first.tolist()}, open(out, "w"))
"""
IMPORTS = """
import onnxruntime, onnxruntime_genai
print(onnxruntime.__version__, onnxruntime_genai.__version__)
"""


def wheel_sites(work: Path) -> dict[str, Path]:
    """Architecture -> a site directory holding both pinned wheels, downloaded and checked."""
    sites = {}
    for (name, arch), (url, sha256) in WHEELS.items():
        wheel = download(url, work / "wheels" / url.rsplit("/", 1)[1], sha256)
        unpacked = work / "unpacked" / f"{name}-{arch}"
        if not unpacked.is_dir():
            safe_extract_zip(wheel, unpacked)
        site = sites.setdefault(arch, work / f"site-{arch}")
        if not (site / name).exists():
            site.mkdir(parents=True, exist_ok=True)
            (site / name).symlink_to(unpacked / name)
    return sites


def library_facts(site: Path) -> dict:
    """What one architecture's libonnxruntime.so carries, read from its bytes."""
    (library,) = (site / "onnxruntime" / "capi").glob("libonnxruntime.so.*")
    data = library.read_bytes()
    kernels = sorted({m.decode() for m in re.findall(rb"kai_run_[a-z0-9_]+", data)})
    glibc = sorted({m.decode() for m in re.findall(rb"GLIBC_2\.\d+", data)}, key=glibc_key)
    return {
        "library": library.name,
        "kleidiai_kernels": len(kernels),
        "sme2_kernels": [k for k in kernels if "_sme2_" in k],
        "sme_kernels": [k for k in kernels if "_sme_" in k],
        "disable_kleidiai_option": b"mlas.disable_kleidiai" in data,
        "newest_glibc": glibc[-1] if glibc else None,
    }


def glibc_key(version: str) -> int:
    return int(version.rsplit(".", 1)[1])


def matmul_model(work: Path, k: int = K, n: int = N, rows: int = ROWS) -> tuple[Path, Path]:
    """One int4 MatMulNBits (block 32, accuracy level 4) of N x K random weights, and an input
    of `rows` rows."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    packed = rng.integers(0, 256, size=(n, k // BLOCK, BLOCK // 2), dtype=np.uint8)
    scales = rng.random(n * k // BLOCK).astype(np.float32) * 0.01 + 0.001
    node = helper.make_node(
        "MatMulNBits",
        ["A", "B", "scales"],
        ["Y"],
        domain="com.microsoft",
        K=k,
        N=n,
        bits=4,
        block_size=BLOCK,
        accuracy_level=4,
    )
    graph = helper.make_graph(
        [node],
        "matmul_nbits",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", n])],
        [numpy_helper.from_array(packed, "B"), numpy_helper.from_array(scales, "scales")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 9
    path, inputs = work / f"matmul_nbits-{k}x{n}.onnx", work / f"input-{rows}x{k}.npy"
    onnx.save(model, path)
    np.save(inputs, rng.standard_normal((rows, k)).astype(np.float32))
    return path, inputs


def emulated(work: Path, cpu: str) -> QemuDevice:
    """The workflow's QEMU device in the pinned userland (fetched once into work)."""
    return QemuDevice(f"qemu-{cpu}", {"userland": str(userland_receipt(work)), "cpu": cpu})


def sme_blocks(log: Path) -> int:
    """Translated blocks of the run that hold an SME instruction (streaming mode, outer
    products)."""
    return sum(bool(SME_CODE.search(b)) for b in BLOCK_TEXT.findall(log.read_bytes()))


def cell(device: QemuDevice, site: Path, files: tuple[Path, Path], disable: str, out: Path):
    """One run of the MatMulNBits on device: (SME blocks translated, its output)."""
    import numpy as np

    script, log = out.with_suffix(".py"), out.with_suffix(".log")
    script.write_text(RUN)
    env = {"PYTHONPATH": f"{site}:{device.site_dirs()[0]}"}
    argv = [device.userland["python"], str(script), str(files[0]), disable, str(files[1]), str(out)]
    result = device.run(argv, 600, env, ["-d", "in_asm", "-D", str(log)])
    if not result.ok:
        raise RuntimeError(f"{device.name}: {result.stderr[-2000:]}")
    blocks = sme_blocks(log)
    log.unlink()
    return blocks, np.load(out)


def kernel_cells(work: Path, site: Path) -> list[dict]:
    """Every emulated CPU, KleidiAI on and off: the SME code it ran and how far its output is
    from KleidiAI's NEON kernels' (no SME) on the same weights and input."""
    import numpy as np

    files = matmul_model(work)
    rows, reference = [], None
    for label, cpu in CPUS.items():
        device = emulated(work, cpu)
        for disable in ("0", "1"):
            blocks, output = cell(device, site, files, disable, work / f"y-{cpu}-{disable}.npy")
            if reference is None:  # the first cell: no SME, KleidiAI on (its NEON kernels)
                reference = output
            rows.append(
                {
                    "cpu": label,
                    "qemu_cpu": cpu,
                    "kleidiai": disable == "0",
                    "sme_blocks": blocks,
                    "max_abs_diff_from_kleidiai_neon": float(np.abs(output - reference).max()),
                    "output_abs_sum": float(np.abs(output).sum()),
                }
            )
            print(rows[-1], flush=True)
    return rows


def genai_model(work: Path, sites: dict[str, Path]) -> Path:
    """The tiny synthetic Qwen3 converted to int4 for the CPU by genai's own model builder."""
    import subprocess

    from mnnrepro.models.synthetic import make_model

    out = work / "genai-model"
    if (out / "genai_config.json").is_file():
        return out
    make_model("tiny", 0, work / "checkpoint")
    url, sha256 = ONNX_IR
    onnx_ir = work / "unpacked" / "onnx_ir"
    if not onnx_ir.is_dir():
        safe_extract_zip(download(url, work / "wheels" / url.rsplit("/", 1)[1], sha256), onnx_ir)
    builder = sites["x86_64"] / "onnxruntime_genai" / "models" / "builder.py"
    argv = [sys.executable, str(builder), "-i", str(work / "checkpoint"), "-o", str(out)]
    argv += ["-p", "int4", "-e", "cpu", "-c", str(work / "builder-cache")]
    env = {  # the checkpoint is local: nothing is asked of the Hugging Face hub
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{sites['x86_64']}:{onnx_ir}",
        "HF_HUB_OFFLINE": "1",
        "HOME": str(work),
    }
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return out


def first_departure(tokens: list[int], reference: list[int]) -> int | None:
    """The first generated token (1-based) where tokens depart from reference; None: never."""
    for n, (a, b) in enumerate(zip(tokens, reference, strict=False), 1):
        if a != b:
            return n
    return None if len(tokens) == len(reference) else min(len(tokens), len(reference)) + 1


def genai_cells(work: Path, sites: dict[str, Path]) -> list[dict]:
    """Greedy answers of the converted model on every emulated CPU, KleidiAI on and off."""
    import json

    import numpy as np

    model = genai_model(work, sites)
    script = work / "generate.py"
    script.write_text(GENERATE)
    rows, reference = [], None
    for label, cpu in CPUS.items():
        device = emulated(work, cpu)
        for disable in ("0", "1"):
            out, log = work / f"g-{cpu}-{disable}.json", work / f"g-{cpu}-{disable}.log"
            argv = [device.userland["python"], str(script), str(model), disable, str(out)]
            argv += [json.dumps(PROMPT), str(NEW_TOKENS)]
            env = {"PYTHONPATH": f"{sites['aarch64']}:{device.site_dirs()[0]}"}
            result = device.run(argv, 600, env, ["-d", "in_asm", "-D", str(log)])
            if not result.ok:
                raise RuntimeError(f"{device.name}: {result.stderr[-2000:]}")
            blocks = sme_blocks(log)
            log.unlink()
            answer = json.loads(out.read_text())
            reference = reference or answer  # no SME, KleidiAI on: its NEON kernels
            logits, first = np.array(answer["first_logits"]), np.array(reference["first_logits"])
            rows.append(
                {
                    "cpu": label,
                    "kleidiai": disable == "0",
                    "sme_blocks": blocks,
                    "max_logit_diff": float(np.abs(logits - first).max()),
                    "mean_abs_logit": float(np.abs(first).mean()),
                    "departs_at_token": first_departure(answer["tokens"], reference["tokens"]),
                    "tokens": answer["tokens"],
                }
            )
            print({k: v for k, v in rows[-1].items() if k != "tokens"}, flush=True)
    return rows


def imports_in(work: Path, site: Path) -> str:
    """What `import onnxruntime, onnxruntime_genai` prints (their versions) in the emulated
    userland."""
    device = emulated(work, "max")
    script = work / "imports.py"
    script.write_text(IMPORTS)
    env = {"PYTHONPATH": f"{site}:{device.site_dirs()[0]}"}
    result = device.run([device.userland["python"], str(script)], 600, env)
    return result.stdout.strip() if result.ok else f"failed: {result.stderr.strip()[-400:]}"


def builder_facts(site: Path) -> dict:
    """What genai's model builder (onnxruntime_genai/models/builder.py) maps and imports."""
    text = (site / "onnxruntime_genai" / "models" / "builder.py").read_text()
    imported = set(re.findall(r"^(?:import|from) (\w+)", text, re.M))
    return {
        "maps_qwen3": '"Qwen3ForCausalLM"' in text,
        "imports": sorted(imported & {"onnx_ir", "torch", "transformers", "onnx"}),
    }


def markdown(result: dict) -> list[str]:
    lines = ["# ONNX Runtime's KleidiAI switch under the emulated SME2 CPUs", ""]
    lines += [
        "`python benchmarks/ort_kleidiai.py`: the pinned PyPI wheels onnxruntime 1.32.0 and "
        "onnxruntime-genai 0.18.0 (cp311, manylinux_2_28), the aarch64 ones in the workflow's "
        "emulated device (QEMU user mode, config/emulated-sme2.yaml's pinned userland).",
        "",
        "| libonnxruntime.so | KleidiAI kernel names | SME2 | SME | `mlas.disable_kleidiai` "
        "| newest GLIBC |",
        "|---|---|---|---|---|---|",
    ]
    for arch, f in result["libraries"].items():
        lines.append(
            f"| {arch} | {f['kleidiai_kernels']} | {len(f['sme2_kernels'])} | "
            f"{len(f['sme_kernels'])} | {'yes' if f['disable_kleidiai_option'] else 'no'} | "
            f"{f['newest_glibc']} |"
        )
    builder = result["builder"]
    lines += [
        "",
        f"In the emulated userland (aarch64), `import onnxruntime, onnxruntime_genai` prints "
        f"`{result['imports']}`. genai's model builder maps Qwen3ForCausalLM: "
        f"{'yes' if builder['maps_qwen3'] else 'no'}; it imports {', '.join(builder['imports'])}.",
    ]
    lines += [
        "",
        f"One int4 MatMulNBits ({N} x {K}, block {BLOCK}, accuracy level 4), {ROWS} input rows, "
        "1 thread; SME blocks: translated blocks holding `smstart` or an outer product "
        "(`*mopa`); the difference is the output's largest from KleidiAI's NEON kernels "
        "(no SME, KleidiAI on) on the same weights and input; the outputs' mean magnitude is "
        f"{result['cells'][0]['output_abs_sum'] / (ROWS * N):.3f}. QEMU translates a block only "
        "to run it: a translated SME block is SME code that ran.",
        "",
        "| emulated CPU | KleidiAI | SME blocks | max abs difference |",
        "|---|---|---|---|",
    ]
    for r in result["cells"]:
        lines.append(
            f"| {r['cpu']} | {'on' if r['kleidiai'] else 'off (mlas.disable_kleidiai)'} | "
            f"{r['sme_blocks']} | {r['max_abs_diff_from_kleidiai_neon']:.3g} |"
        )
    genai = result["genai"]
    lines += [
        "",
        f"The tiny synthetic Qwen3 (seed 0) converted by genai's builder (int4, CPU), "
        f"{NEW_TOKENS} greedy tokens after a {len(PROMPT)}-token prompt through genai's API, "
        "`mlas.disable_kleidiai` in a config overlay; compared with KleidiAI's NEON kernels "
        f"(no SME, KleidiAI on); the first step's mean |logit| is {genai[0]['mean_abs_logit']:.2f} "
        "(random weights).",
        "",
        "| emulated CPU | KleidiAI | SME blocks | first step: max logit difference "
        "| answer departs at token |",
        "|---|---|---|---|---|",
    ]
    for r in genai:
        lines.append(
            f"| {r['cpu']} | {'on' if r['kleidiai'] else 'off (mlas.disable_kleidiai)'} | "
            f"{r['sme_blocks']} | {r['max_logit_diff']:.3g} | "
            f"{r['departs_at_token'] or 'never'} |"
        )
    return lines


@contextlib.contextmanager
def kept_or_temporary(workdir: str):
    """workdir (kept and reused: downloads are cached), or a temporary directory if empty."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(workdir or scratch).resolve()
        work.mkdir(parents=True, exist_ok=True)
        yield work


def work_directory(description: str):
    """The directory the command line's --workdir names, else a temporary one."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workdir", default="", help="kept and reused (downloads are cached)")
    return kept_or_temporary(parser.parse_args().workdir)


def main() -> None:
    with work_directory(__doc__.splitlines()[0]) as work:
        sites = wheel_sites(work)
        result = {
            "wheels": {f"{n}-{a}": sha for (n, a), (_, sha) in WHEELS.items()},
            "libraries": {arch: library_facts(site) for arch, site in sorted(sites.items())},
            "imports": imports_in(work, sites["aarch64"]),
            "builder": builder_facts(sites["x86_64"]),
            "cells": kernel_cells(work, sites["aarch64"]),
            "genai": genai_cells(work, sites),
        }
    write_results("ort_kleidiai", result, markdown(result))
    print("\n".join(markdown(result)))


if __name__ == "__main__":
    main()
