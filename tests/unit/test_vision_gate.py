"""Image prompts in the correctness gate: a real tiny Qwen3-VL, exported and run by MNN."""

from __future__ import annotations

import hashlib
import io
from dataclasses import replace

import numpy as np
import pytest
import yaml
from conftest import TINY_VL, greedy_answers, run_snakemake, section
from PIL import Image, ImageOps

from mnnrepro.config import ConfigError, prompt_image_files
from mnnrepro.models.export import export_model
from mnnrepro.models.mnn_files import is_vision_model, missing_files
from mnnrepro.runs.greedy import gate_prompts, label_answers

# its module-scoped fixture is built once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("tiny-vl")

GATE = section(
    "correctness",
    prompts=["hello world"],
    image_prompts=[{"image": "config/images/test-card.png", "text": "Describe this image."}],
)
STAGED = {"config/images/test-card.png": {"device_path": "/d/0-test-card.png", "sha256": "ab"}}


@pytest.fixture(scope="module")
def tiny_vl(workflow_model, tmp_path_factory):
    """tiny-vl (Qwen3-VL layout: text decoder + vision encoder): `mnn`, the workflow's export
    of config-tiny.yaml's synth-tiny-vl, and `again`, its checkpoint `hf` exported once more
    here (~7 s)."""
    made = workflow_model("synth-tiny-vl", TINY_VL)
    base = tmp_path_factory.mktemp("tiny-vl")
    for name in ("mnn", "hf"):
        (base / name).symlink_to(made / name)
    export_model(str(made / "hf"), str(base / "again"), 4, 64, io.StringIO())
    return base


def greedy(model_dir, prompts, out):
    return [a["tokens"] for a in greedy_answers(model_dir, prompts, out)["answers"]]


def test_export_keeps_the_vision_encoder_deterministically(tiny_vl):
    model = tiny_vl / "mnn"
    assert is_vision_model(model) and (model / "visual.mnn").is_file()
    assert missing_files(model) == []
    for name in ("llm.mnn", "visual.mnn", "visual.mnn.weight"):
        assert (model / name).read_bytes() == (tiny_vl / "again" / name).read_bytes(), name


def test_the_image_reaches_the_model(root, tiny_vl, tmp_path):
    """Same text, another image: another answer; same image: the same answer, every time."""
    card = root / "config" / "images" / "test-card.png"
    inverted = tmp_path / "inverted.png"
    ImageOps.invert(Image.open(card).convert("RGB")).save(inverted)
    text = "Describe this image."
    first = greedy(
        tiny_vl / "mnn",
        [f"<img>{card}</img>{text}", f"<img>{inverted}</img>{text}"],
        tmp_path / "a.json",
    )
    again = greedy(tiny_vl / "mnn", [f"<img>{card}</img>{text}"], tmp_path / "b.json")
    assert first[0] != first[1]
    assert again[0] == first[0]


def test_text_only_model_ignores_image_prompts():
    prompts = gate_prompts(GATE, {}, vision=False)
    assert prompts == [{"label": "hello world", "sent": "hello world"}]


def test_vision_model_gets_the_image_prompt_in_mnn_syntax():
    prompts = gate_prompts(GATE, STAGED, vision=True)
    assert prompts[1] == {
        "label": "[image test-card.png] Describe this image.",
        "sent": "<img>/d/0-test-card.png</img>Describe this image.",
        "image_sha256": "ab",
    }
    payload = {"answers": [{"prompt": p["sent"], "tokens": [1]} for p in prompts]}
    labelled = label_answers(payload, prompts)["answers"]
    assert [a["prompt"] for a in labelled] == [p["label"] for p in prompts]
    assert labelled[1]["sent"].startswith("<img>") and labelled[1]["image_sha256"] == "ab"


def test_vision_model_without_image_prompts_is_refused():
    with pytest.raises(ValueError, match=r"`correctness.image_prompts` is empty"):
        gate_prompts(replace(GATE, image_prompts=()), {}, vision=True)


def test_missing_visual_encoder_is_named(tmp_path):
    (tmp_path / "llm_config.json").write_text('{"is_visual": true}')
    assert "visual.mnn" in missing_files(tmp_path)


def test_relative_images_are_found_in_the_working_then_the_workflow_directory(
    root, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    found = prompt_image_files({"correctness": GATE.as_written}, root)
    card = root / "config/images/test-card.png"
    assert found == {"config/images/test-card.png": str(card)}
    (tmp_path / "config/images").mkdir(parents=True)
    (tmp_path / "config/images/test-card.png").write_bytes(card.read_bytes())
    found = prompt_image_files({"correctness": GATE.as_written}, root)
    # inside the working directory: named relative to it (a moved checkout plans the same)
    assert found["config/images/test-card.png"] == "config/images/test-card.png"


def test_missing_image_names_the_key(root, tmp_path):
    cfg = yaml.safe_load((root / "tests/workflow/config-tiny.yaml").read_text())
    cfg["correctness"]["image_prompts"] = [{"image": "no/such.png", "text": "x"}]
    with pytest.raises(ConfigError, match=r"`correctness.image_prompts.0.image`: no file"):
        prompt_image_files(cfg, root)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake(
        root, "-n", "--configfile", str(path), "--directory", str(tmp_path), check=False
    )
    assert proc.returncode != 0
    assert "correctness.image_prompts.0.image" in proc.stdout + proc.stderr


def test_shipped_test_card_is_the_one_documented(root):
    """config/images/README.md states the card's sha256; reports record it per answer."""
    card = (root / "config/images/test-card.png").read_bytes()
    readme = (root / "config/images/README.md").read_text()
    assert hashlib.sha256(card).hexdigest() in readme


def test_the_vision_arithmetic_counts_the_checkpoints_own_matrix_weights(tiny_vl):
    """models/mnn_layout.py's operations per image token, from the config's dimensions, are
    2 x the encoder's matrix weights as the checkpoint holds them: the patch embedding and
    every block's for each of the merge_size^2 patches of an image token, and each merger's
    (the patch merger and the deepstack ones) once per image token."""
    import glob
    import json

    from safetensors import safe_open

    from mnnrepro.models.mnn_layout import vision_ops_per_image_token

    config = json.loads((tiny_vl / "hf" / "config.json").read_text())["vision_config"]
    per_patch = per_token = 0
    for path in glob.glob(str(tiny_vl / "hf" / "*.safetensors")):
        with safe_open(path, "np") as tensors:
            for name in tensors.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                shape = tensors.get_slice(name).get_shape()
                if not name.endswith(".weight") or len(shape) < 2 or "pos_embed" in name:
                    continue  # biases, norms and the position table: no matrix product
                size = int(np.prod(shape))
                if "merger" in name:
                    per_token += size
                elif "visual." in name and ("blocks." in name or "patch_embed" in name):
                    per_patch += size
    patches = config["spatial_merge_size"] ** 2
    assert per_patch and per_token  # the checkpoint holds a vision encoder
    assert vision_ops_per_image_token(config) == 2 * (patches * per_patch + per_token)
