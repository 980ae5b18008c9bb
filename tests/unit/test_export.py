"""Synthetic model + llmexport: real export of the tiny shape, no telemetry, no installs."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from importlib import metadata

import pytest

from mnnrepro.models.export import RUNNER, export_model
from mnnrepro.models.mnn_files import REQUIRED_FILES
from mnnrepro.models.spec import Model
from mnnrepro.models.synthetic import SHAPES, make_model
from mnnrepro.runs.staging import RUNNER as RUNNER_PATH


def installed_packages() -> set[tuple[str, str]]:
    return {(d.metadata["Name"].lower(), d.version) for d in metadata.distributions()}


def test_tiny_export_has_every_file_and_a_manifest(tiny_model):
    for name in REQUIRED_FILES:
        assert (tiny_model / name).is_file(), name
    manifest = json.loads((tiny_model.parent / "manifest.json").read_text())
    assert manifest["exporter"]["package"] == "llmexport"
    assert manifest["exporter"]["version"] == metadata.version("llmexport")
    assert "--quant_bit" in manifest["exporter"]["arguments"]
    listed = {f["path"] for f in manifest["files"]}
    assert set(REQUIRED_FILES) <= listed
    assert all(len(f["sha256"]) == 64 for f in manifest["files"])


@pytest.mark.slow
def test_export_is_deterministic_and_changes_no_installed_package(tiny_model, tmp_path):
    """Same seed, same bytes; and the mnn wheel's converter installs nothing (we block it)."""
    before = installed_packages()
    make_model("tiny", 0, tmp_path / "hf")
    again = export_model(str(tmp_path / "hf"), str(tmp_path / "mnn"), 4, 64, io.StringIO())
    assert installed_packages() == before
    first = json.loads((tiny_model.parent / "manifest.json").read_text())
    assert again["files"] == first["files"]
    assert "aliyun-log-python-sdk" not in {name for name, _ in installed_packages()}


def test_telemetry_module_cannot_load_in_the_export_process():
    code = (
        "import importlib.util, sys; "
        f"spec = importlib.util.spec_from_file_location('m', {str(RUNNER)!r}); "
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
        "m.block_telemetry(); "
        "from MNN.tools import mnnconvert; "
        "print('logger', mnnconvert.mnn_logger)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "logger None" in proc.stdout
    assert "pip install" not in proc.stdout + proc.stderr


def test_qwen3_06b_shape_is_the_real_one():
    shape = SHAPES["qwen3-0.6b"]
    assert (shape["vocab_size"], shape["hidden_size"], shape["num_hidden_layers"]) == (
        151936,
        1024,
        28,
    )
    assert (shape["num_attention_heads"], shape["num_key_value_heads"]) == (16, 8)


def test_same_seed_same_weights(tmp_path):
    """Seeded: the same seed writes the same checkpoint, another seed other weights; in
    bfloat16 like Qwen's own checkpoints, norm scales 1 and weights drawn at the config's std."""
    import torch
    from safetensors.torch import load_file

    make_model("tiny", 3, tmp_path / "a")
    make_model("tiny", 3, tmp_path / "b")
    make_model("tiny", 4, tmp_path / "c")
    a, b, c = (load_file(tmp_path / d / "model.safetensors") for d in "abc")
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    key = "model.layers.0.mlp.up_proj.weight"
    assert not torch.equal(a[key], c[key])
    assert {t.dtype for t in a.values()} == {torch.bfloat16}
    assert torch.equal(a["model.norm.weight"], torch.ones_like(a["model.norm.weight"]))
    std = float(a[key].float().std())
    assert abs(std - SHAPES["tiny"]["initializer_range"]) < 0.2 * std


@pytest.mark.slow
def test_export_source_with_hqq_yields_a_model_the_engine_runs(tmp_path):
    """The `export:` route (llmexport --hqq) on a local checkout; the manifest says how."""
    from mnnrepro.models.export import export_settings

    make_model("tiny", 2, tmp_path / "hf")
    spec = {
        "export": {
            "from": {"path": str(tmp_path / "hf")},
            "hqq": True,
            "awq": False,
            "sym": False,
            "quant_bit": 4,
            "quant_block": 64,
            "lm_quant_bit": 8,
            "extra_args": [],
        }
    }
    source, settings, extra = export_settings(Model.of("m", spec))
    assert (source, extra) == ("export", ["--hqq", "--lm_quant_bit", "8"])
    manifest = export_model(
        str(tmp_path / "hf"),
        str(tmp_path / "mnn"),
        settings["quant_bit"],
        settings["quant_block"],
        io.StringIO(),
        extra,
    )
    assert "--hqq" in manifest["exporter"]["arguments"]
    assert manifest["exporter"]["version"] == metadata.version("llmexport")
    out = tmp_path / "greedy.json"
    subprocess.run(
        [
            sys.executable,
            str(RUNNER_PATH),
            "greedy",
            "--config",
            str(tmp_path / "mnn" / "config.json"),
            "--prompts",
            '["hi"]',
            "--max-new-tokens",
            "4",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert len(json.loads(out.read_text())["answers"][0]["tokens"]) == 4
