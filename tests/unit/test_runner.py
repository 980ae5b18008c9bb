"""The engine-side runner with the real prebuilt MNN engine on the tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

from mnnrepro.engines.runner.genai_llm import version_beside
from mnnrepro.runs.staging import RUNNER


def run_runner(*args, tmp_path):
    out = tmp_path / "out.json"
    subprocess.run(
        [sys.executable, str(RUNNER), *args, "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    return json.loads(out.read_text())


def test_bench_measures_p_prefill_tokens_and_exactly_n_decode_tokens(tiny_model, tmp_path):
    for n in (1, 7, 40):
        result = run_runner(
            "bench",
            "--config",
            str(tiny_model / "config.json"),
            "--runtime",
            '{"thread_num": 1}',
            "--prompt-tokens",
            "24",
            "--generate-tokens",
            str(n),
            "--warmup",
            "1",
            tmp_path=tmp_path,
        )
        phases = {r["phase"]: r for r in result["results"]}
        assert phases["prefill"]["tokens"] == 24
        assert phases["decode"]["tokens"] == n
        for r in phases.values():
            assert r["seconds"] > 0
            assert abs(r["tps"] - r["tokens"] / r["seconds"]) < 1e-6 * r["tps"]
        assert result["engine"]["device_supports"].startswith("The device supports:")
        assert result["engine"]["mnn_version"] == "3.6.1"


def test_decode_does_not_stop_at_eos(tiny_model, tmp_path):
    """Generate far past where a sampler honouring EOS would likely stop."""
    result = run_runner(
        "bench",
        "--config",
        str(tiny_model / "config.json"),
        "--prompt-tokens",
        "4",
        "--generate-tokens",
        "200",
        "--warmup",
        "0",
        tmp_path=tmp_path,
    )
    assert result["results"][1]["tokens"] == 200


def test_greedy_is_deterministic_across_thread_counts(tiny_model, tmp_path):
    args = [
        "greedy",
        "--config",
        str(tiny_model / "config.json"),
        "--prompts",
        json.dumps(["你好", "hello world"]),
        "--max-new-tokens",
        "8",
    ]
    one = run_runner(*args, "--runtime", '{"thread_num": 1}', tmp_path=tmp_path)
    two = run_runner(*args, "--runtime", '{"thread_num": 2}', tmp_path=tmp_path)
    assert [a["tokens"] for a in one["answers"]] == [a["tokens"] for a in two["answers"]]
    assert all(len(a["tokens"]) == 8 for a in one["answers"])


def test_a_staged_wheels_version_is_read_beside_the_module_without_importing_it(tmp_path):
    """genai_llm.version_beside: the dist-info in the imported module's own directory (the
    staged wheels side by side), not another installation of the same package."""
    staged, other = tmp_path / "staged", tmp_path / "other"
    for site, version in ((staged, "1.32.0"), (other, "9.9.9")):
        info = site / f"onnxruntime-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: onnxruntime\nVersion: {version}\n"
        )
    (staged / "onnxruntime_genai").mkdir()
    genai = SimpleNamespace(__file__=str(staged / "onnxruntime_genai/__init__.py"))
    assert version_beside(genai, "onnxruntime") == "1.32.0"
    assert version_beside(genai, "numpy") == ""  # not staged beside it
