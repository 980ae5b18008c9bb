"""A transformers checkpoint converted by ONNX Runtime GenAI's own model builder (the builder
in the pinned onnxruntime-genai wheel, run by onnx_builder_main.py beside this) to genai's model
directory: int4 for the CPU (MatMulNBits, block 32, accuracy level 4: the path on which ONNX
Runtime runs KleidiAI's kernels), every output file hashed, and its layout (what a decode step
reads, what a prefill token computes) read from the ONNX graph.

A vision-language checkpoint (Qwen3-VL) is given to the builder as its language model alone
(models/language_model.py), the model every engine here runs on text prompts.

The builder runs with the local checkpoint and the Hugging Face hub offline: nothing is
downloaded. A checkpoint it cannot convert (an architecture it does not map) fails with one
line naming the model and the builder's own last words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.fetch import publish_dir
from mnnrepro.files import file_table
from mnnrepro.models.language_model import HUB_OFFLINE, text_model

PRECISION, TARGET = "int4", "cpu"  # the builder's -p and -e: int4 MatMulNBits for the CPU
CONFIG = "genai_config.json"
BUILDER_MAIN = Path(__file__).with_name("onnx_builder_main.py")


class ConversionError(ReproError, RuntimeError):
    pass


def convert(model: str, checkpoint: str, site: str, out_dir: str, cache: str, log_file) -> dict:
    """Run genai's builder on checkpoint into out_dir (published whole); its record."""
    with text_model(checkpoint, cache, log_file) as (text, language):
        return {**build(model, text, site, out_dir, cache, log_file), **language}


def build(model: str, checkpoint, site: str, out_dir: str, cache: str, log_file) -> dict:
    """genai's builder on a text checkpoint."""
    with publish_dir(out_dir) as staging:
        argv = [sys.executable, str(BUILDER_MAIN), str(site), "-i", str(checkpoint)]
        argv += ["-o", str(staging)]
        argv += ["-p", PRECISION, "-e", TARGET, "-c", str(cache)]
        env = {**os.environ, **HUB_OFFLINE}
        print("$ " + " ".join(argv), file=log_file, flush=True)
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        log_file.write(done.stdout + done.stderr)
        if done.returncode != 0 or not (staging / CONFIG).is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ConversionError(
                f"model {model}: genai's model builder could not convert {checkpoint} "
                f"(exit code {done.returncode}: {last})"
            )
        layout = onnx_layout(staging / "model.onnx")
    return {
        "builder": {"precision": PRECISION, "execution_provider": TARGET},
        "files": file_table(out_dir),
        "layout": layout,
    }


def onnx_layout(path: Path) -> dict:
    """What a decode step reads (every weight once, the embedding table's one row) and what a
    prefill token computes (2 x K x N per MatMulNBits), from the graph and its initializers'
    sizes (external data lengths, without loading them)."""
    # heavy: the builder's output is read here only
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    sizes = {i.name: initializer_bytes(i) for i in graph.initializer}
    rows = {i.name: (i.dims[0] if i.dims else 1) for i in graph.initializer}
    gathered = {n.input[0] for n in graph.node if n.op_type == "Gather" and n.input[0] in sizes}
    per_token = sum(size for name, size in sizes.items() if name not in gathered)
    per_token += sum(sizes[name] // max(rows[name], 1) for name in gathered)
    nbits = [n for n in graph.node if n.op_type == "MatMulNBits"]
    ops = 0.0
    for node in nbits:
        attrs = {a.name: a.i for a in node.attribute}
        ops += 2.0 * attrs["K"] * attrs["N"]
    return {
        "format": "onnx",
        "weight_file": path.name,
        "weight_bytes": sum(sizes.values()),
        "matmul_nbits": len(nbits),
        "decode_bytes_per_token": per_token,
        "prefill_ops_per_token": ops or None,
    }


def initializer_bytes(tensor) -> int:
    """An initializer's size: its external data's `length`, else its raw data's."""
    for entry in tensor.external_data:
        if entry.key == "length":
            return int(entry.value)
    return len(tensor.raw_data)
