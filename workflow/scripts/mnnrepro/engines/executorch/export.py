"""A transformers checkpoint exported by ExecuTorch's own LLM exporter (the exporter in the
pinned host wheel, `executorch.examples.models.llama.export_llama`, with its Qwen3 weight
converter) to one program, model.pte: int4 weights in groups of 32 with dynamically quantized
int8 activations (`8da4w`, the exporter's int4 LLM mode, the group the other stacks' int4
uses) lowered to the XNNPACK delegate; a static key/value cache, a dynamic prompt length.

What of it runs SME2 is measured, not assumed: the delegate serializes the exporter's int4
blockwise (qb4w, even with one group per channel: backends/xnnpack/operators/quant_params.py),
and ExecuTorch 1.5.1's XNNPACK has NEON GEMMs alone for it (KleidiAI's qsi4c32 packing); its
SME2 GEMMs are for channelwise int4 and int8 (qp8_f32_qc4w, qc8w), which the exporter's modes
(8da4w; `8da8w` is refused by its own argument check) do not make. On the emulated SME2 CPU
the SME2 kernels that ran are KleidiAI's fp32 GEMMs of the program's fp32 matrix products
(kernels.csv of tests/workflow/test_executorch.py's run, 2026-12-07).

Beside the program: the correctness gate's prompts (`correctness.prompts`), each put in the
checkpoint's chat template and encoded by its tokenizer (prompts.json: executorch_tool takes
token ids, and no tokenizer runs on the device); every output file hashed. Other prompts are
encoded when the model is exported again (the rule's params).

The exporter runs with the local checkpoint and the Hugging Face hub offline: nothing is
downloaded. A checkpoint of an architecture it does not export, or a program without the
XNNPACK delegate, fails with one line naming the model."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

from mnnrepro.engines.executorch.program import PROGRAM, PROMPTS
from mnnrepro.errors import ReproError
from mnnrepro.fetch import publish_dir
from mnnrepro.files import file_table
from mnnrepro.models.language_model import HUB_OFFLINE, text_model

QUANTIZATION = {"qmode": "8da4w", "group_size": 32}  # the exporter's -qmode and -G
# the program's static limits: the longest prompt forwarded at once, and the cache's positions
MAX_SEQ_LENGTH, MAX_CONTEXT_LENGTH = 1024, 2048
DELEGATE_ID = b"XnnpackBackend"  # the delegate's id, written in a program that uses it


class ConversionError(ReproError, RuntimeError):
    pass


def convert(
    model: str, checkpoint: str, site: str, prompts: list[str], out_dir: str, cache: str, log_file
) -> dict:
    """Export checkpoint with the exporter in site into out_dir (published whole), the gate's
    prompts encoded beside it; its record."""
    with text_model(checkpoint, cache, log_file) as (text, language):
        exported = export(model, Path(text), site, prompts, out_dir, cache, log_file)
        return {**exported, **language}


def export(
    model: str, checkpoint: Path, site: str, prompts, out_dir: str, cache: str, log_file
) -> dict:
    hf_config = json.loads((checkpoint / "config.json").read_text())
    if hf_config.get("model_type") != "qwen3":
        raise ConversionError(
            f"model {model}: ExecuTorch's exporter is run here for Qwen3 checkpoints; "
            f"{checkpoint} is {hf_config.get('model_type')!r}"
        )
    work, checkpoint = Path(cache).resolve(), checkpoint.resolve()  # the exporter runs in work
    work.mkdir(parents=True, exist_ok=True)
    params = work / "params.json"
    params.write_text(json.dumps(exporter_params(hf_config), sort_keys=True))
    weights = work / "checkpoint.pth"
    tools = "executorch.examples.models"
    convert_weights = [f"{tools}.qwen3.convert_weights", str(checkpoint), str(weights)]
    run(model, site, convert_weights, log_file, work)
    with publish_dir(out_dir) as staging:
        argv = [f"{tools}.llama.export_llama", "--model", "qwen3_0_6b"]
        argv += ["-c", str(weights), "-p", str(params), "-kv", "-d", "fp32"]
        argv += ["-qmode", QUANTIZATION["qmode"], "-G", str(QUANTIZATION["group_size"])]
        argv += ["-X", "--xnnpack-extended-ops", "--max_seq_length", str(MAX_SEQ_LENGTH)]
        argv += ["--max_context_length", str(MAX_CONTEXT_LENGTH)]
        argv += ["--metadata", json.dumps(special_tokens(hf_config))]
        program = staging / PROGRAM  # the exporter writes --output_name as it is given
        argv += ["-o", str(staging), "--output_name", str(program)]
        run(model, site, argv, log_file, work)
        check_program(model, program)
        encoded = encoded_prompts(checkpoint, prompts)
        (staging / PROMPTS).write_text(json.dumps(encoded, ensure_ascii=False, sort_keys=True))
    return {
        "exporter": {
            **QUANTIZATION,
            "delegate": "xnnpack",
            "max_seq_length": MAX_SEQ_LENGTH,
            "max_context_length": MAX_CONTEXT_LENGTH,
        },
        "files": file_table(out_dir),
        "layout": checkpoint_layout(checkpoint, hf_config, Path(out_dir) / PROGRAM),
    }


def check_program(model: str, program: Path) -> None:
    """The exporter wrote the program, and it uses the XNNPACK delegate."""
    if not program.is_file():
        raise ConversionError(f"model {model}: the exporter wrote no {program.name}")
    if DELEGATE_ID not in program.read_bytes():
        raise ConversionError(
            f"model {model}: the exporter's {program.name} does not use the XNNPACK delegate "
            f"(no {DELEGATE_ID.decode()} in it): its linear layers would not run XNNPACK's "
            "kernels"
        )


def run(model: str, site: str, module_argv: list[str], log_file, work: Path) -> None:
    """python -m <module_argv> with the exporter's wheels first on the path, offline, in the
    work directory (where anything it writes beside its outputs stays)."""
    argv = [sys.executable, "-m", *module_argv]
    path = os.pathsep.join(
        p for p in (str(Path(site).resolve()), os.environ.get("PYTHONPATH")) if p
    )
    env = {**os.environ, "PYTHONPATH": path, **HUB_OFFLINE}
    print("$ " + " ".join(argv), file=log_file, flush=True)
    done = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
    log_file.write(done.stdout + done.stderr)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConversionError(
            f"model {model}: ExecuTorch's {module_argv[0]} failed (exit code "
            f"{done.returncode}: {last})"
        )


def exporter_params(hf_config: dict) -> dict:
    """The exporter's model arguments (examples/models/llama/model_args.py) of a Qwen3
    config.json: the fields its own Qwen3 configurations set."""
    heads = hf_config["num_attention_heads"]
    return {
        "dim": hf_config["hidden_size"],
        "hidden_dim": hf_config["intermediate_size"],
        "n_layers": hf_config["num_hidden_layers"],
        "n_heads": heads,
        "n_kv_heads": hf_config.get("num_key_value_heads", heads),
        "head_dim": hf_config.get("head_dim", hf_config["hidden_size"] // heads),
        "vocab_size": hf_config["vocab_size"],
        "norm_eps": hf_config["rms_norm_eps"],
        "rope_theta": hf_config.get("rope_theta")
        or hf_config.get("rope_parameters", {}).get("rope_theta", 1000000.0),
        "use_scaled_rope": False,
        "use_hf_rope": True,
        "use_qk_norm": True,
        "qk_norm_before_rope": True,
        "attention_qkv_bias": hf_config.get("attention_bias", False),
    }


def special_tokens(hf_config: dict) -> dict:
    """The program's metadata methods the LLM runner reads: its BOS and end-of-sequence ids."""
    eos = hf_config.get("eos_token_id")
    eos_ids = eos if isinstance(eos, list) else [eos]
    bos = hf_config.get("bos_token_id")
    return {"get_bos_id": eos_ids[0] if bos is None else bos, "get_eos_ids": eos_ids}


def encoded_prompts(checkpoint: Path, prompts: list[str]) -> dict[str, list[int]]:
    """Each prompt as one user message in the checkpoint's chat template, generation prompt
    added, encoded by its tokenizer: what the other runners apply to a gate prompt."""
    # heavy: transformers renders the checkpoint's own template with its own tokenizer
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint), local_files_only=True)
    encoded = {}
    for prompt in prompts:
        messages = [{"role": "user", "content": prompt}]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        encoded[prompt] = tokenizer(text, add_special_tokens=False)["input_ids"]
    return encoded


def checkpoint_layout(checkpoint: Path, hf_config: dict, program: Path) -> dict:
    """What a decode step reads and a prefill token computes, from the checkpoint's tensor
    shapes (its safetensors headers) at the exporter's quantization: every linear layer's
    weights as int4 with an fp32 scale per group of 32 (the tied output layer among them, the
    exporter unties it), the fp32 embedding table's one row, the norms; 2 x K x N per
    linear."""
    shapes = safetensors_shapes(checkpoint)
    embedding = next(s for n, s in shapes.items() if n.endswith("embed_tokens.weight"))
    linears = [s for n, s in shapes.items() if len(s) == 2 and "embed_tokens" not in n]
    if hf_config.get("tie_word_embeddings") or not any(
        n.endswith("lm_head.weight") for n in shapes
    ):
        linears.append(embedding)  # the output layer reads a copy of the embedding table
    weights = sum(rows * cols for rows, cols in linears)
    norms = sum(4 * s[0] for s in shapes.values() if len(s) == 1)
    group = QUANTIZATION["group_size"]
    quantized = sum(rows * cols // 2 + 4 * rows * cols // group for rows, cols in linears)
    per_token = quantized + 4 * embedding[1] + norms
    return {
        "format": "pte",
        "weight_file": program.name,
        "weight_bytes": program.stat().st_size,
        "decode_bytes_per_token": per_token,
        "prefill_ops_per_token": 2.0 * weights,
        "estimated_from": "the checkpoint's shapes at 8da4w, group 32 (checkpoint_layout)",
    }


def safetensors_shapes(checkpoint: Path) -> dict[str, list[int]]:
    """Every tensor's shape in the checkpoint's safetensors files (their JSON headers)."""
    shapes = {}
    for path in sorted(checkpoint.glob("*.safetensors")):
        with open(path, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        shapes.update({n: t["shape"] for n, t in header.items() if n != "__metadata__"})
    return shapes
