"""Qwen3 and Qwen3-VL models with seeded random weights and a locally trained tokenizer.

Nothing is downloaded: the tokenizer is trained here on a small built-in corpus and the
weights are drawn from a seeded generator. The text such a model writes is gibberish by
design; what matters is that its shapes, and so its compute and memory traffic, are real.

A vision-language shape (VISION_SHAPES) is a Qwen3-VL: llmexport exports its vision
encoder too (visual.mnn), so the correctness gate's image prompts run through it."""

from __future__ import annotations

import os
from pathlib import Path

from mnnrepro.models.shapes import SHAPES, VISION_SHAPES

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# A small bilingual corpus: enough for a byte-level BPE that covers any input.
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Briefly explain what a matrix multiplication is.",
    "Large language models run on phones with quantized weights.",
    "Prefill processes the prompt; decode writes one token at a time.",
    "你好，世界。今天天气很好。",
    "请简要解释矩阵乘法。",
    "0123456789 + - * / = ( ) [ ] { } < > , . ; : ! ?",
]


def tokenizer_vocab_size(shape: dict) -> int:
    return min(shape["vocab_size"], 1024)


def train_tokenizer(vocab_size: int):
    # heavy: the synthetic model's rule only
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    # heavy: the synthetic model's rule only
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def make_model(shape_name: str, seed: int, out_dir: str | os.PathLike) -> dict:
    """Write a transformers checkpoint + tokenizer to out_dir; returns the text config."""
    # heavy: the synthetic model's rule only
    import torch

    # heavy: as torch
    from transformers.initialization import no_init_weights

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if shape_name not in SHAPES and shape_name not in VISION_SHAPES:
        known = sorted([*SHAPES, *VISION_SHAPES])
        raise ValueError(f"unknown synthetic shape {shape_name!r}; known: {known}")
    default_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # the dtype of Qwen's own checkpoints
    try:
        with no_init_weights():
            if shape_name in SHAPES:
                model, tokenizer = qwen3_model(SHAPES[shape_name])
            else:
                model, tokenizer = qwen3_vl_model(VISION_SHAPES[shape_name], out_dir)
    finally:
        torch.set_default_dtype(default_dtype)
    model.tie_weights()
    random_weights(model, seed, model.config.get_text_config().initializer_range)
    model.eval().save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return model.config.get_text_config().to_dict()


def random_weights(model, seed: int, std: float) -> None:
    """Draw every parameter once, in place, from one generator seeded with `seed`: normal(0,
    std) (transformers' initializer_range), norm scales 1, biases 0. The model is built without
    transformers' own initialisation (no_init_weights), which drew each weight twice in float32:
    for qwen3-0.6b 17 s and a 2.4 GB checkpoint on a 2-core machine, now about 5 s and 1.2 GB
    # heavy: the synthetic model's rule only
    (bfloat16)."""
    # heavy: the synthetic model's rule only
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():  # a tied weight is listed once
            if name.endswith(".bias"):
                param.zero_()
            elif "norm" in name.rsplit(".", 2)[-2]:
                param.fill_(1.0)
            else:
                param.normal_(0.0, std, generator=generator)


def qwen3_model(shape: dict):
    # heavy: as torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = train_tokenizer(tokenizer_vocab_size(shape))
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = Qwen3Config(**shape, eos_token_id=eos, pad_token_id=eos, bos_token_id=None)
    return Qwen3ForCausalLM(config), tokenizer


def qwen3_vl_model(shape: dict, out_dir: Path):
    # heavy: as torch
    from transformers import (
        Qwen2VLImageProcessorPil,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
    )

    text = shape["text"]
    tokenizer = train_tokenizer(tokenizer_vocab_size(text))
    tokenizer.add_special_tokens({"additional_special_tokens": VISION_TOKENS})
    ids = dict(zip(VISION_TOKENS, tokenizer.convert_tokens_to_ids(VISION_TOKENS), strict=True))
    if len(tokenizer) > text["vocab_size"]:
        raise ValueError(f"tokenizer has {len(tokenizer)} tokens, vocab_size {text['vocab_size']}")
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = Qwen3VLConfig(
        text_config={**text, "eos_token_id": eos, "pad_token_id": eos},
        vision_config=shape["vision"],
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    vision = shape["vision"]
    Qwen2VLImageProcessorPil(
        patch_size=vision["patch_size"],
        merge_size=vision["spatial_merge_size"],
        temporal_patch_size=vision["temporal_patch_size"],
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    ).save_pretrained(out_dir)
    return Qwen3VLForConditionalGeneration(config), tokenizer
