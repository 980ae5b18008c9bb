"""The ExecuTorch kind's own parts (engines/executorch/): its wheel fetched, verified and read
over loopback HTTP, its exporter's arguments and its model's layout from a checkpoint's shapes,
a prompt encoded as the tool takes it, and the bad inputs it refuses in one line naming the key
or file. The whole path (export, tool, gate, rows, what ran): tests/workflow/test_executorch.py."""

from __future__ import annotations

import hashlib
import io
import json
import platform
import struct
import zipfile

import pytest
from test_fetch import Server

from mnnrepro.engines.device_io import BenchError
from mnnrepro.engines.executorch.export import (
    ConversionError,
    check_program,
    checkpoint_layout,
    exporter_params,
    special_tokens,
)
from mnnrepro.engines.executorch.fetch import LIBRARIES, WheelError, fetch_engine, fetch_exporter
from mnnrepro.engines.executorch.kind import ExecutorchEngine, prompt_ids
from mnnrepro.fetch import FetchError
from mnnrepro.models.shapes import SHAPES

# a delegate's bytes as its .dynstr holds names: an SME2 GEMM, its getter, a NEON kernel
DELEGATE = (
    b"\x7fELF\x00kai_run_matmul_clamp_f32_qai8dxp1vlx8_qsi4cxp4vlx8_1vlx4vl_sme2_mopa"
    b"\x00kai_get_mr_matmul_clamp_f32_qai8dxp1vlx8_qsi4cxp4vlx8_1vlx4vl_sme2_mopa"
    b"\x00xnn_qp8_f32_qc4w_gemm_minmax_ukernel_16x64c4__neonsme2_get_mr"
    b"\x00kai_kernel_matmul_clamp_f32_qai8dxp1x4_qsi4cxp4vlx4_1x4vl_sme2_sdot\x00xnn_f32_gemm_neon\x00"
)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


def executorch_wheel(delegate: bytes = DELEGATE, libraries=LIBRARIES) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("executorch/__init__.py", "")
        zf.writestr("executorch/include/executorch/extension/module/module.h", "// header")
        for name in libraries:
            body = delegate if name == "libexecutorch_backend_xnnpack.so" else b"\x7fELF"
            zf.writestr(f"executorch/lib/{name}", body)
    return buf.getvalue()


def pin(server, body: bytes, name="executorch-1.5.1-cp311-cp311-manylinux_2_28_aarch64.whl"):
    server.files[f"/{name}"] = body
    return {"url": server.url(f"/{name}"), "sha256": hashlib.sha256(body).hexdigest()}


def test_an_engine_wheel_is_fetched_verified_and_only_its_runtime_is_staged(server, tmp_path):
    pins = [pin(server, executorch_wheel())]
    record = fetch_engine("linux-arm64", pins, tmp_path / "cache", tmp_path / "site")
    assert record["version"] == "1.5.1" and record["target_arch"] == "aarch64"
    # the functions that execute, not their getters
    assert record["delegate"]["sme2_kernels"] == [
        "kai_kernel_matmul_clamp_f32_qai8dxp1x4_qsi4cxp4vlx4_1x4vl_sme2_sdot",
        "kai_run_matmul_clamp_f32_qai8dxp1vlx8_qsi4cxp4vlx8_1vlx4vl_sme2_mopa",
    ]
    # the device gets the libraries; the headers are the tool's build's, the Python nobody's
    assert sorted(f["path"] for f in record["files"]) == sorted(f"lib/{n}" for n in LIBRARIES)
    assert (tmp_path / "site/include/executorch/extension/module/module.h").is_file()
    assert not (tmp_path / "site/__init__.py").exists()
    assert ExecutorchEngine.sme_kernel_count(_record(record)) == 2


def _record(written: dict):
    from mnnrepro.engines.registry import EngineRecord

    return EngineRecord.of({**written, "engine": "et"})


def test_wheels_that_cannot_be_used_are_one_line_naming_the_key(server, tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    neon_only = [pin(server, executorch_wheel(delegate=b"\x00xnn_f32_gemm_neon\x00"))]
    with pytest.raises(WheelError, match=r"^config key `executorch.wheels.linux-arm64`: .*"):
        fetch_engine("linux-arm64", neon_only, cache, site)
    # the same delegate on the host is what it is: an x86-64 wheel has no SME2 to measure
    x86 = "executorch-1.5.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    host_wheel = [pin(server, executorch_wheel(delegate=b"\x00xnn_f32_gemm_neon\x00"), x86)]
    if platform.machine() == "x86_64":
        assert fetch_engine("host", host_wheel, cache, site)["delegate"]["sme2_kernels"] == []
    partial = [
        pin(
            server,
            executorch_wheel(libraries=LIBRARIES[:2]),
            "executorch-1.5.1-cp311-cp311-linux_aarch64.whl",
        )
    ]
    with pytest.raises(WheelError, match=r"holds no lib/libexecutorch_kernels_optimized\.so"):
        fetch_engine("linux-arm64", partial, cache, tmp_path / "other")
    other = [pin(server, executorch_wheel(), "torchao-0.18.0-py3-none-any.whl")]
    with pytest.raises(WheelError, match=r"`executorch.wheels.host\[0\]`: expected the executorch"):
        fetch_engine("host", other, cache, tmp_path / "other")
    # a compiled wheel for another machine than the platform's: the host's is x86-64 here
    arm_on_host = [
        pin(server, executorch_wheel(), "executorch-1.5.1-cp311-cp311-linux_aarch64.whl")
    ]
    if platform.machine() != "aarch64":
        with pytest.raises(
            WheelError, match=r"`executorch.wheels.host\[0\]`: .* built for aarch64"
        ):
            fetch_engine("host", arm_on_host, cache, tmp_path / "other")
        with pytest.raises(WheelError, match=r"^config key `executorch.exporter\[0\]`: "):
            fetch_exporter(arm_on_host, cache, tmp_path / "other")
    changed = [{**pin(server, executorch_wheel()), "sha256": "0" * 64}]
    with pytest.raises(FetchError) as err:
        fetch_engine("linux-arm64", changed, cache, tmp_path / "other")
    assert str(err.value).startswith("config key `executorch.wheels.linux-arm64[0]`: ")
    assert "\n" not in str(err.value) and not (tmp_path / "other").exists()


def test_an_exporter_of_another_version_is_refused_when_the_plan_is_made():
    section = {
        "wheels": {"host": [{"url": "https://x/executorch-1.5.1-cp311-cp311-linux_x86_64.whl"}]},
        "exporter": [{"url": "https://x/executorch-1.4.0-cp311-cp311-linux_x86_64.whl"}],
    }
    engines = {"et": {"executorch": {"platform": "host"}}}
    (line,) = ExecutorchEngine.config_problems(engines, section, {})
    assert line.startswith("config key `executorch.wheels.host`: engine et runs executorch 1.5.1")
    assert "exports with executorch 1.4.0" in line
    section["exporter"][0]["url"] = section["wheels"]["host"][0]["url"]
    assert ExecutorchEngine.config_problems(engines, section, {}) == []


def test_the_exporters_arguments_and_the_layout_come_from_the_checkpoint(tmp_path):
    shape = SHAPES["tiny"]
    params = exporter_params(shape)
    assert (params["dim"], params["n_layers"], params["n_kv_heads"]) == (64, 2, 2)
    assert params["use_qk_norm"] and params["qk_norm_before_rope"]  # Qwen3's attention
    assert special_tokens({"eos_token_id": 2, "bos_token_id": None}) == {
        "get_bos_id": 2,
        "get_eos_ids": [2],
    }
    hidden, inner, vocab = shape["hidden_size"], shape["intermediate_size"], shape["vocab_size"]
    tensors = {
        "model.embed_tokens.weight": [vocab, hidden],
        "model.layers.0.mlp.up_proj.weight": [inner, hidden],
        "model.norm.weight": [hidden],
    }
    write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "model.pte").write_bytes(b"x" * 100)
    layout = checkpoint_layout(tmp_path, {"tie_word_embeddings": True}, tmp_path / "model.pte")
    linears = inner * hidden + vocab * hidden  # the tied output layer reads the table's copy
    assert layout["prefill_ops_per_token"] == 2.0 * linears
    # int4 per weight, an fp32 scale per group of 32, one fp32 embedding row, the norm
    scales = 4 * linears // 32
    assert layout["decode_bytes_per_token"] == linears // 2 + scales + 4 * hidden + 4 * hidden
    assert layout["weight_bytes"] == 100


def write_safetensors(path, tensors: dict) -> None:
    header = {n: {"dtype": "F32", "shape": s, "data_offsets": [0, 0]} for n, s in tensors.items()}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def test_a_program_without_the_xnnpack_delegate_is_refused_naming_the_model(tmp_path):
    program = tmp_path / "model.pte"
    program.write_bytes(b"ET12" + b"\x00" * 64)
    with pytest.raises(ConversionError, match=r"^model m: the exporter's model.pte does not use"):
        check_program("m", program)
    program.write_bytes(b"ET12XnnpackBackend\x00")
    check_program("m", program)
    with pytest.raises(ConversionError, match=r"wrote no absent\.pte"):
        check_program("m", tmp_path / "absent.pte")


def test_the_gate_sends_the_prompts_as_the_export_encoded_them_and_refuses_others():
    encoded = {"你好": [1, 5, 9], "hello world": [1, 7]}
    assert prompt_ids(["hello world", "你好"], encoded) == ["1 7", "1 5 9"]
    with pytest.raises(BenchError, match=r"^config key `correctness.prompts`: \['new'\] were not"):
        prompt_ids(["你好", "new"], encoded)


def test_the_gates_prompts_are_encoded_in_the_checkpoints_chat_template(tmp_path):
    """As the other runners send a prompt: one user message, the generation prompt added."""
    from transformers import AutoTokenizer

    from mnnrepro.engines.executorch.export import encoded_prompts
    from mnnrepro.models.synthetic import make_model

    make_model("tiny", 0, tmp_path)
    encoded = encoded_prompts(tmp_path, ["你好", "hello world"])
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True)
    for prompt, ids in encoded.items():
        assert ids and all(isinstance(i, int) for i in ids)
        text = tokenizer.decode(ids)
        assert prompt in text and text.endswith("assistant\n"), text
