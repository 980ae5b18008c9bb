"""The language model of a vision-language checkpoint, as the text-only checkpoint it is.

Every engine here runs Qwen3-VL on text prompts. genai's builder converts a Qwen3-VL checkpoint
to a decoder that takes the vision encoder's embeddings and 3-D positions (its `qwen3_vl`
model), which a text-only runner cannot feed; the other engines run its language model alone.
For a text prompt Qwen3-VL's language model is a Qwen3: its interleaved multimodal rotary
embedding gives every token the same temporal, height and width position, which is the plain
rotary embedding (tests/unit/test_language_model.py compares the logits of both with
transformers). So the builder is given the language model's weights under Qwen3's names and
a Qwen3 config made from the checkpoint's `text_config`, shard by shard (a 4B checkpoint is
never held whole)."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

from mnnrepro.errors import ReproError

VISION_LANGUAGE = {"Qwen3VLForConditionalGeneration": "Qwen3ForCausalLM"}
TEXT_PREFIX = ("model.language_model.", "model.")  # the language model's weights, renamed
KEPT = ("lm_head.",)  # weights kept under their own names
INDEX = "model.safetensors.index.json"
NOT_COPIED = {"config.json", INDEX}  # the rest beside the weights: tokenizer, templates


# a converter's environment: the checkpoint is local, nothing is asked of the Hugging Face hub
HUB_OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


class LanguageModelError(ReproError, ValueError):
    pass


@contextlib.contextmanager
def text_model(checkpoint: str | Path, cache: str | Path, log_file):
    """The checkpoint a text-only converter is given, and what its record adds: the checkpoint
    itself, or for a vision-language one its language model, written to cache/language-model
    and removed once converted (it is as large as the weights)."""
    if not is_vision_language(checkpoint):
        yield checkpoint, {}
        return
    text = Path(cache) / "language-model"
    try:
        language = write_text_checkpoint(checkpoint, text)
        print(f"the language model of {checkpoint}: {language}", file=log_file, flush=True)
        yield text, {"language_model": language}
    finally:
        shutil.rmtree(text, ignore_errors=True)


def architecture(checkpoint: str | Path) -> str:
    described = json.loads((Path(checkpoint) / "config.json").read_text(encoding="utf-8"))
    return (described.get("architectures") or [""])[0]


def is_vision_language(checkpoint: str | Path) -> bool:
    return architecture(checkpoint) in VISION_LANGUAGE


def text_config(vision_language: dict) -> dict:
    """The Qwen3 config of a Qwen3-VL config's language model."""
    text = dict(vision_language["text_config"])
    rope = text.pop("rope_parameters", None) or text.pop("rope_scaling", None) or {}
    theta = text.pop("rope_theta", None) or rope.get("rope_theta")
    if theta is None:
        raise LanguageModelError("config.json: text_config gives no rope_theta")
    text.pop("model_type", None)
    tied = vision_language.get("tie_word_embeddings", text.get("tie_word_embeddings", False))
    return {
        **text,
        "architectures": [VISION_LANGUAGE[vision_language["architectures"][0]]],
        "model_type": "qwen3",
        "rope_parameters": {"rope_type": "default", "rope_theta": theta},
        "tie_word_embeddings": tied,
        "dtype": vision_language.get("dtype", text.get("dtype", "bfloat16")),
    }


def text_name(name: str) -> str | None:
    """A weight's name in the text checkpoint, or None for the vision encoder's."""
    old, new = TEXT_PREFIX
    if name.startswith(old):
        return new + name[len(old) :]
    return name if name.startswith(KEPT) else None


def write_text_checkpoint(checkpoint: str | Path, out_dir: str | Path) -> dict:
    """Write the language model of a vision-language checkpoint as a text-only one into
    out_dir (replaced); what was written and from what."""
    # torch: the checkpoint's own step only
    from safetensors.torch import load_file, save_file

    checkpoint, out_dir = Path(checkpoint), Path(out_dir)
    described = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    shards = sorted(checkpoint.glob("*.safetensors"))
    if not shards:
        raise LanguageModelError(f"{checkpoint}: no *.safetensors weights")
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    weight_map, dropped = {}, 0
    for shard in shards:
        tensors = load_file(shard)
        kept = {text_name(n): t for n, t in tensors.items() if text_name(n) is not None}
        dropped += len(tensors) - len(kept)
        save_file(kept, out_dir / shard.name, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(kept, shard.name))
        del tensors, kept
    if len(shards) > 1:
        index = {"metadata": {}, "weight_map": dict(sorted(weight_map.items()))}
        (out_dir / INDEX).write_text(json.dumps(index, indent=2), encoding="utf-8")
    converted = text_config(described)
    (out_dir / "config.json").write_text(json.dumps(converted, indent=2), encoding="utf-8")
    for other in checkpoint.iterdir():
        if other.is_file() and other.suffix != ".safetensors" and other.name not in NOT_COPIED:
            shutil.copy2(other, out_dir / other.name)
    return {
        "from": described["architectures"][0],
        "as": converted["architectures"][0],
        "weights": len(weight_map),
        "vision_weights_dropped": dropped,
    }
