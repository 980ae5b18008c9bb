"""Qwen3-architecture models with seeded random weights and a locally trained tokenizer.

Nothing is downloaded: the tokenizer is trained here on a small built-in corpus and the
weights are drawn from a seeded generator. The text such a model writes is gibberish by
design; what matters is that its shapes, and so its compute and memory traffic, are real.
"""

from __future__ import annotations

import os
from pathlib import Path

# Named shapes. qwen3-0.6b is Qwen/Qwen3-0.6B's config.json (vocab 151936, 28 layers).
SHAPES: dict[str, dict] = {
    "tiny": {
        "vocab_size": 1024,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 4096,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        # larger than the usual 0.02 so that greedy outputs of a 2-layer model vary
        "initializer_range": 0.5,
    },
    "qwen3-0.6b": {
        "vocab_size": 151936,
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 40960,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        "initializer_range": 0.02,
    },
}

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
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
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
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
    """Write a transformers Qwen3 checkpoint + tokenizer to out_dir; returns its config."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    if shape_name not in SHAPES:
        raise ValueError(f"unknown synthetic shape {shape_name!r}; known: {sorted(SHAPES)}")
    shape = SHAPES[shape_name]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(tokenizer_vocab_size(shape))
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = Qwen3Config(**shape, eos_token_id=eos, pad_token_id=eos, bos_token_id=None)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).eval()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return config.to_dict()
