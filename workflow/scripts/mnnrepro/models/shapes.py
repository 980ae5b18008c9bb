"""The named shapes of the synthetic models (models/synthetic.py makes them): plain data, read
where a config is checked without what makes a model."""

from __future__ import annotations

# Qwen/Qwen3-0.6B's config.json (vocab 151936, 28 layers)
QWEN3_06B = {
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
}


def one_layer(
    hidden: int,
    intermediate: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    rope_theta: float = 1000000.0,
    rms_norm_eps: float = 1e-6,
) -> dict:
    """A model's GEMM shapes in one Qwen3 layer with a small vocabulary (4096): what a
    prediction counts and scales to the whole model by weights."""
    return {
        "vocab_size": 4096,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "max_position_embeddings": 4096,
        "rope_theta": rope_theta,
        "rms_norm_eps": rms_norm_eps,
        "tie_word_embeddings": True,
        "initializer_range": 0.02,
    }


# Named shapes.
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
    "qwen3-0.6b": QWEN3_06B,
    # Qwen3-0.6B in one layer with a small vocabulary (as qwen3-vl-4b-layer is to the phone
    # model): counted on this host beside the whole model, it checks the prediction's
    # scaling of one layer's counts to a whole model by weights (config/predict-host.yaml)
    "qwen3-0.6b-layer": {
        **QWEN3_06B,
        "vocab_size": 4096,
        "num_hidden_layers": 1,
        "max_position_embeddings": 4096,
    },
    # Qwen3-VL-4B-Instruct's language model layer (its config.json's text_config: hidden 2560,
    # intermediate 9728, 32 query and 8 key-value heads of 128) in one layer, with a small
    # vocabulary: the GEMM shapes, and so the SME2 and NEON tiling, are the phone model's
    # (its lm_head, 151936 x 2560 there, is not: a prediction scales by weights).
    "qwen3-vl-4b-layer": one_layer(2560, 9728, 32, 8, 128, rope_theta=5000000.0),
    # The language models of published SME2 figures on the same phone, one layer each with a
    # small vocabulary (config/predict-held-out.yaml; benchmarks/held_out.py): the GEMM shapes
    # of meta-llama/Llama-3.2-1B (hidden 2048, intermediate 8192, 32 query and 8 key-value
    # heads of 64) and of Qwen/Qwen2.5-VL-3B-Instruct's (hidden 2048, intermediate 11008, 16
    # query and 2 key-value heads of 128), in Qwen3's architecture (what synthetic.py makes)
    "llama32-1b-layer": one_layer(2048, 8192, 32, 8, 64, rope_theta=500000.0, rms_norm_eps=1e-5),
    "qwen25-vl-3b-layer": one_layer(2048, 11008, 16, 2, 128),
    # llama.cpp's figures (config/predict-held-out-llamacpp.yaml): one layer of
    # Qwen/Qwen2-VL-2B-Instruct's language model (hidden 1536, intermediate 8960, 12 query and
    # 2 key-value heads of 128), and of microsoft/phi-2 (hidden 2560, 32 heads of 80, an MLP
    # of two 2560 x 10240 matrices). Qwen3's architecture has three MLP matrices: phi-2's is
    # given the same weights in three, intermediate 6816 (3 x 6816 = 20448 against its 2 x
    # 10240, a multiple of Q4_0's 32-value blocks); its GEMMs' widths are not phi-2's.
    "qwen2-vl-2b-layer": one_layer(1536, 8960, 12, 2, 128),
    "phi-2-layer": one_layer(2560, 6816, 32, 32, 80, rope_theta=10000.0, rms_norm_eps=1e-5),
}


# Qwen3-VL shapes: text decoder + vision encoder (Qwen/Qwen3-VL-*'s config.json layout).
VISION_SHAPES: dict[str, dict] = {
    "tiny-vl": {
        "text": {
            **{
                k: v
                for k, v in SHAPES["tiny"].items()
                if k not in ("rope_theta", "tie_word_embeddings")
            },
            # Qwen3-VL's interleaved multimodal RoPE; the sections add up to head_dim / 2
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 5000000.0,
                "mrope_section": [2, 3, 3],
                "mrope_interleaved": True,
            },
        },
        "vision": {
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "out_hidden_size": 64,  # = the text hidden size
            "num_position_embeddings": 256,
            "deepstack_visual_indexes": [0, 1],
            "initializer_range": 0.5,
        },
    },
}


def text_shape(name: str) -> dict:
    """A named shape's language model: the Qwen3 shape itself, or a Qwen3-VL's text decoder."""
    return SHAPES[name] if name in SHAPES else VISION_SHAPES[name]["text"]


# what says which model a gain was measured or predicted on: two models alike in these are
# the same language model to the cost model (its work per token), whatever they are named
IDENTITY = ("hidden_size", "num_hidden_layers")


def identity(shape: dict) -> dict | None:
    """A model's identity (IDENTITY) from its shape or its MNN layout; None where unknown."""
    found = {k: shape.get(k) for k in IDENTITY}
    return found if all(isinstance(v, int) for v in found.values()) else None


def identity_text(found: dict | None) -> str:
    if found is None:
        return "of unrecorded shape"
    return f"hidden size {found['hidden_size']}, {found['num_hidden_layers']} layers"


def measured_identities(manifests: list[dict], layouts: list[dict]) -> dict[str, dict | None]:
    """Each measured model's identity: a layout's that records it (MNN's: what the engine
    loaded), else its synthetic shape's (what it was made as), else None."""
    found = {}
    for m in manifests:
        named = m.get("spec", {}).get("shape")
        found[m["model"]] = identity(text_shape(named)) if named else None
    for layout in layouts:
        found[layout["model"]] = identity(layout) or found.get(layout["model"])
    return found
