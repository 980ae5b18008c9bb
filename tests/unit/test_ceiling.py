"""The decode ceiling's arithmetic on model directories whose byte counts the test chose
(sparse files of exact sizes), and on a model exported for real by the workflow's exporter."""

from __future__ import annotations

import json

import pytest

from mnnrepro.analysis.mechanism import ceiling_tps
from mnnrepro.models.mnn_layout import decode_bytes_per_token, model_layout, prefill_ops_per_token


def sized(path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def model_dir(tmp_path, tied=True, embedding=False, visual=True):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"llm_model": "llm.mnn", "llm_weight": "w.bin"}))
    llm = {"hidden_size": 1024}
    if tied:
        # head weights [600_000, 900_000) + 100_000 bytes of scales, 4-bit, blocks of 64
        llm["tie_embeddings"] = [600_000, 900_000, 100_000, 4, 64]
    (d / "llm_config.json").write_text(json.dumps(llm))
    sized(d / "w.bin", 1_000_000)
    sized(d / "llm.mnn", 5_000)
    sized(d / "tokenizer.mtok", 7_000)
    if visual:
        sized(d / "visual.mnn.weight", 3_000_000)
        sized(d / "visual.mnn", 40_000)
    if embedding:
        sized(d / "embeddings_bf16.bin", 151_936 * 1024 * 2)
    return d


def test_decode_reads_the_weights_and_graph_not_the_encoder_or_tokenizer(tmp_path):
    layout = model_layout(model_dir(tmp_path))
    assert decode_bytes_per_token(layout) == 1_000_000 + 5_000


def test_a_separate_embedding_table_counts_one_bf16_row(tmp_path):
    layout = model_layout(model_dir(tmp_path, tied=False, embedding=True))
    assert decode_bytes_per_token(layout) == 1_000_000 + 5_000 + 1024 * 2


def test_prefill_ops_count_decoder_weights_without_the_output_head(tmp_path):
    layout = model_layout(model_dir(tmp_path))
    # 4 bits + 8 bytes of scale/zero per 64 weights = 0.625 bytes per weight
    decoder_bytes = 1_000_000 - (900_000 - 600_000 + 100_000)
    assert prefill_ops_per_token(layout) == pytest.approx(2 * decoder_bytes / 0.625)


def test_unknown_quantization_gives_no_ops_rather_than_a_guess(tmp_path):
    layout = model_layout(model_dir(tmp_path, tied=False))
    assert prefill_ops_per_token(layout) is None


def test_ceiling_is_bandwidth_over_bytes_per_token():
    assert ceiling_tps(85.0, 2_500_000_000) == pytest.approx(34.0)


def test_real_exported_model(tiny_model):
    """The tiny synthetic model exported by llmexport (tests/conftest.py): the weight file and
    graph are what decode reads; the tied head's range lies inside the weight file."""
    layout = model_layout(tiny_model)
    weight = (tiny_model / "llm.mnn.weight").stat().st_size
    assert decode_bytes_per_token(layout) == weight + (tiny_model / "llm.mnn").stat().st_size
    assert 0 < layout["head_bytes"] < weight
    assert 0 < prefill_ops_per_token(layout) < 2 * weight * 2  # at most 2 weights per byte
