"""The language model of a vision-language checkpoint as a text-only checkpoint
(models/language_model.py): on a real synthetic Qwen3-VL checkpoint (the workflow's own, seed
0), transformers computes the same logits for a text prompt from both; bad checkpoints get one
line."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import TINY_VL

from mnnrepro.models.language_model import (
    LanguageModelError,
    is_vision_language,
    text_name,
    write_text_checkpoint,
)

PROMPT = [5, 17, 300, 2, 99, 1000, 42, 7, 64, 3]  # token ids of the tiny vocabulary (1024)


@pytest.fixture(scope="module")
def vl_checkpoint(workflow_model):
    return workflow_model("synth-tiny-vl", TINY_VL) / "hf"


def logits(model_class, checkpoint):
    import torch

    model = model_class.from_pretrained(checkpoint, dtype=torch.float32).eval()
    with torch.no_grad():
        return model(input_ids=torch.tensor([PROMPT])).logits


@pytest.mark.slow
def test_the_language_model_answers_a_text_prompt_as_the_vision_language_model(
    vl_checkpoint, tmp_path
):
    import transformers

    assert is_vision_language(vl_checkpoint)
    written = write_text_checkpoint(vl_checkpoint, tmp_path / "text")
    assert written["from"] == "Qwen3VLForConditionalGeneration"
    assert written["as"] == "Qwen3ForCausalLM" and written["vision_weights_dropped"] > 0
    assert not is_vision_language(tmp_path / "text")
    config = json.loads((tmp_path / "text/config.json").read_text())
    assert config["model_type"] == "qwen3" and "vision_config" not in config
    assert (tmp_path / "text/tokenizer.json").is_file()
    theirs = logits(transformers.AutoModelForImageTextToText, vl_checkpoint)
    ours = logits(transformers.AutoModelForCausalLM, tmp_path / "text")
    assert ours.shape == theirs.shape == (1, len(PROMPT), config["vocab_size"])
    assert (ours - theirs).abs().max().item() <= 1e-5 * theirs.abs().max().item()


def test_the_vision_encoder_is_left_out_and_the_language_model_renamed():
    assert text_name("model.language_model.layers.0.mlp.up_proj.weight") == (
        "model.layers.0.mlp.up_proj.weight"
    )
    assert text_name("lm_head.weight") == "lm_head.weight"
    assert text_name("model.visual.blocks.0.attn.qkv.weight") is None


@pytest.mark.slow
def test_a_checkpoint_without_weights_or_rope_is_one_line(vl_checkpoint, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(vl_checkpoint / "config.json", bare / "config.json")
    with pytest.raises(LanguageModelError, match=r"bare: no \*\.safetensors weights$"):
        write_text_checkpoint(bare, tmp_path / "out")
    config = json.loads((bare / "config.json").read_text())
    config["text_config"].pop("rope_parameters", None)
    config["text_config"].pop("rope_theta", None)
    shutil.copy(next(vl_checkpoint.glob("*.safetensors")), bare)
    (bare / "config.json").write_text(json.dumps(config))
    with pytest.raises(LanguageModelError, match="text_config gives no rope_theta"):
        write_text_checkpoint(bare, tmp_path / "out")


def test_a_converter_is_given_the_language_model_and_it_is_not_kept(vl_checkpoint, tmp_path):
    """text_model: what ONNX Runtime's builder and ExecuTorch's exporter are given."""
    import io

    from mnnrepro.models.language_model import text_model

    log = io.StringIO()
    with text_model(vl_checkpoint, tmp_path / "cache", log) as (text, added):
        assert text == tmp_path / "cache/language-model" and (text / "config.json").is_file()
        assert added["language_model"]["as"] == "Qwen3ForCausalLM"
    assert not text.exists() and "the language model of" in log.getvalue()
    with pytest.raises(RuntimeError), text_model(vl_checkpoint, tmp_path / "cache", log) as (t, _):
        raise RuntimeError("the converter failed")
    assert not t.exists()  # removed on a failure too
    qwen3 = tmp_path / "qwen3"  # a text checkpoint is given as it is
    write_text_checkpoint(vl_checkpoint, qwen3)
    with text_model(qwen3, tmp_path / "cache", log) as (same, added):
        assert (same, added) == (qwen3, {})
