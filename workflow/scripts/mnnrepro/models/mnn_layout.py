"""An MNN model's arithmetic, from its files (the rules below): the bytes a decode step reads,
the operations of a prompt token and of an image token. layout.json of the models stage
(`describe_model_layout`); analysis/mechanism.py divides the measured read bandwidth by the
bytes per token (the decode ceiling) and the prompt's operations by prefill's time. A GGUF
model's layout is engines/llamacpp/gguf_convert_main.py's.

Bytes a decode step reads (`decode_bytes_per_token`):
* counted: the language model's weight file (`llm_weight` of config.json, default
  llm.mnn.weight) and its graph (`llm_model`, llm.mnn) - every decoder layer's weights with
  their quantization scales, and the output head, are read once per generated token; with tied
  embeddings (llm_config.json `tie_embeddings`) the table *is* the output head, read whole;
* one row of a separate embedding table (`embeddings_bf16.bin` or config.json
  `embedding_file`): hidden_size x 2 bytes (bf16) - a token looks up its own row only;
* not counted: the rest of that table, vision/audio encoders (visual.mnn*, audio.mnn*; they
  run in prefill), tokenizer and configs, and the KV cache (it grows with the context; for
  Qwen3-0.6B at 300 tokens ~10 % of the weights). Counting less than is read makes the
  ceiling an upper bound: `bandwidth / bytes per token` is a speed decode cannot exceed.

Prefill arithmetic (`prefill_ops_per_token`): 2 operations (multiply + add) per weight of the
decoder's matrix products, weights counted from the weight file's bytes and the quantization
(bits/8 + 8 bytes of scale and zero point per block, MNN's asymmetric layout) minus the output
head (computed for the last prompt token only); attention's own products are not counted.

Vision arithmetic (`vision_ops_per_image_token`, a model with a vision encoder whose
transformers config is known: a synthetic or exported model): 2 operations per weight of the
encoder's matrix products for every patch an image token is merged from (patch embedding,
each block's attention projections and MLP), plus the patch merger and each deepstack merger
once per image token - from the config's dimensions (Qwen3-VL's `vision_config`), since
MNN's visual.mnn.weight mixes quantizations; attention's own products are not counted.
None for a model downloaded already converted (no config to read).
"""

from __future__ import annotations

import json
from pathlib import Path

EMBEDDING_BYTES_PER_VALUE = 2  # bf16
SCALE_BYTES_PER_BLOCK = 8  # fp32 scale + fp32 zero point per block (asymmetric)


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def model_layout(model_dir: str | Path) -> dict:
    """The files and settings of an exported MNN LLM that the arithmetic needs."""
    model_dir = Path(model_dir)
    files = _json(model_dir / "config.json")  # MNN's: which file holds what
    llm_config = _json(model_dir / "llm_config.json")
    export = _json(model_dir / "export_args.json")
    weight = model_dir / files.get("llm_weight", "llm.mnn.weight")
    graph = model_dir / files.get("llm_model", "llm.mnn")
    embedding = model_dir / files.get("embedding_file", "embeddings_bf16.bin")
    tied = llm_config.get("tie_embeddings") or []
    bits = export.get("quant_bit") or (tied[3] if len(tied) > 3 else None)
    block = export.get("quant_block") or (tied[4] if len(tied) > 4 else None)
    return {
        "weight_file": weight.name,
        "weight_bytes": weight.stat().st_size if weight.is_file() else None,
        "graph_bytes": graph.stat().st_size if graph.is_file() else 0,
        "embedding_file": embedding.name if embedding.is_file() else None,
        "hidden_size": llm_config.get("hidden_size"),
        "num_hidden_layers": llm_config.get("layer_nums"),
        # tie_embeddings = [start of the head's weights, their end, bytes of its scales, ...]
        "head_bytes": (tied[1] - tied[0] + tied[2]) if len(tied) >= 3 else None,
        "quant_bit": bits,
        "quant_block": block,
    }


def decode_bytes_per_token(layout: dict) -> int | None:
    """Bytes one decode step reads (the rule in this module's docstring); None if unknown."""
    if not layout.get("weight_bytes"):
        return None
    row = 0
    if layout.get("embedding_file"):
        if not layout.get("hidden_size"):
            return None
        row = layout["hidden_size"] * EMBEDDING_BYTES_PER_VALUE
    return layout["weight_bytes"] + layout["graph_bytes"] + row


def prefill_ops_per_token(layout: dict) -> float | None:
    """Operations per prompt token of the decoder's matrix products; None if unknown."""
    if not (layout.get("weight_bytes") and layout.get("quant_bit") and layout.get("quant_block")):
        return None
    per_weight = layout["quant_bit"] / 8 + SCALE_BYTES_PER_BLOCK / layout["quant_block"]
    decoder_bytes = layout["weight_bytes"] - (layout.get("head_bytes") or 0)
    return 2 * decoder_bytes / per_weight


def vision_ops_per_image_token(vision: dict) -> float | None:
    """Operations of the vision encoder's matrix products per image token (the rule in this
    module's docstring), from a Qwen3-VL `vision_config`; None without one."""
    try:
        h, i, depth = vision["hidden_size"], vision["intermediate_size"], vision["depth"]
        merge = vision["spatial_merge_size"] ** 2  # patches per image token
        patch = (
            vision.get("in_channels", 3) * vision["temporal_patch_size"] * vision["patch_size"] ** 2
        )
        merged = h * merge  # a merger's input: the merged patches side by side
        mergers = 1 + len(vision.get("deepstack_visual_indexes") or [])
    except (KeyError, TypeError):
        return None
    per_patch = patch * h + depth * (4 * h * h + 2 * h * i)
    per_merger = merged * merged + merged * vision["out_hidden_size"]
    return 2.0 * (merge * per_patch + mergers * per_merger)


def describe_model(model_dir: str | Path, checkpoint_config: str | Path | None = None) -> dict:
    """layout.json of a model: what the arithmetic read from its files, and the results;
    checkpoint_config: the transformers config.json it was converted from, where known."""
    layout = model_layout(model_dir)
    vision = _json(Path(checkpoint_config)).get("vision_config") if checkpoint_config else None
    return {
        **layout,
        "decode_bytes_per_token": decode_bytes_per_token(layout),
        "prefill_ops_per_token": prefill_ops_per_token(layout),
        "vision_ops_per_image_token": vision_ops_per_image_token(vision) if vision else None,
    }
