"""The vision phase of an MNN build: llm_bench takes no images, so each benchmark invocation
runs mnn_vision (built beside the gate tool) right after it (runs/benchmark.py vision_step).

MNN cannot be built within a test's time here, so `llm_bench` and `mnn_vision` are stand-ins
that replay real captures: llm_bench 3.6.1's `-kv true` output (tests/data/llm_bench) and the
file mnn_vision wrote in a real emulated run (tests/data/mnn_vision/PROVENANCE.md). The tests
are about what each command is told and what the raw record keeps, never about the numbers.
The real tool runs in benchmarks/kernel_attribution.py's emulated-vision run."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

from conftest import SHORT_SETTINGS, full_bench, full_variants

from mnnrepro.devices.local import LocalDevice
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import file_table, read_json, sha256_file
from mnnrepro.runs.benchmark import run_schedule
from mnnrepro.runs.raw_files import measurement_key, variant_specs
from mnnrepro.runs.schedule import interleaved
from mnnrepro.runs.staging import push_receipt
from mnnrepro.runs.vision import measured_vision, with_vision_set

DATA = Path(__file__).resolve().parents[1] / "data"
LLM_BENCH = DATA / "llm_bench" / "llm_bench_q06kv361"
MNN_VISION = DATA / "mnn_vision" / "qemu-no-sme-361.json"
IMAGE = Path(__file__).resolve().parents[2] / "config" / "images" / "test-card.png"


def script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def built_engine(tmp_path: Path, seen: Path) -> tuple[dict, Path, Path]:
    """An engine record, its bin directory and its gate-tool directory, laid out as the build
    rules lay them out (results/engines/<key>/bin, .../gate-tool)."""
    key = tmp_path / "engines" / "e-0123456789ab"
    bin_dir, tool_dir = key / "bin", key / "gate-tool"
    bin_dir.mkdir(parents=True)
    tool_dir.mkdir()
    json_out = '"$(echo "$@" | sed -e "s/.* -j //" -e "s/ .*//")"'
    script(
        bin_dir / "llm_bench",
        f"cp {shlex.quote(str(LLM_BENCH))}.json {json_out}\n"
        f"cat {shlex.quote(str(LLM_BENCH))}.stdout.txt\n",
    )
    script(
        tool_dir / "mnn_vision",
        f'printf "%s\\n" "$@" > {shlex.quote(str(seen))}\n'
        f'cp "$2" {shlex.quote(str(seen))}.images\n'
        f'cp {shlex.quote(str(MNN_VISION))} "$6"\n',
    )
    record = {
        "engine": "e",
        "kind": "build",
        "version": "3.6.1",
        "platform": "host",
        "files": file_table(bin_dir),
    }
    return record, bin_dir, tool_dir


def test_a_builds_benchmark_asks_the_images_through_mnn_vision_after_llm_bench(tmp_path):
    seen = tmp_path / "mnn_vision-argv.txt"
    record, bin_dir, tool_dir = built_engine(tmp_path, seen)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"llm_model": "llm.mnn"}))
    (model / "llm_config.json").write_text(json.dumps({"image_pad": 474, "is_visual": True}))
    specs = variant_specs(
        full_variants({"a": {"engine": "e", "runtime": {"thread_num": 1}}}),
        {"e": EngineRecord.of(record)},
        "0",
        {},  # no variant hides SME: no mask pushed
    )
    device = LocalDevice("host")
    try:
        receipt = push_receipt(device, {"mnn": str(model)}, "m", {"e": bin_dir}, {"e": tool_dir})
        vision = {"images": ["test-card.png"], "text": "What is in the picture?"}
        bench = full_bench(**{**SHORT_SETTINGS, "warmup": 1, "vision": vision})
        tool_record = {"engine": "e", "files": file_table(tool_dir)}  # as build_gate_tool writes
        bench = with_vision_set(device, bench, [("test-card.png", str(IMAGE))], [tool_record])
        run_schedule(device, interleaved(["a"], 1), specs, receipt, bench, tmp_path / "raw")
    finally:
        device.close()
    raw = read_json(tmp_path / "raw" / "a" / "rep-000.json")
    wrote = json.loads(MNN_VISION.read_text())
    phases = {r["phase"]: r for r in raw["results"]}
    assert list(phases) == ["prefill", "decode", "vision", "image_prefill", "first_token"]
    assert (phases["vision"]["seconds"], phases["vision"]["tokens"]) == (
        wrote["vision_s"],
        wrote["image_tokens"],
    )
    assert phases["vision"]["pixels_mp"] == wrote["pixels_mp"]
    assert phases["image_prefill"]["tokens"] == wrote["prompt_tokens"]
    assert phases["first_token"]["seconds"] == wrote["first_token_s"]
    # what mnn_vision was told: the staged image, the question, the model's image_pad id, the
    # warm-up; what it wrote is kept whole, with its window on the device's clock
    argv = seen.read_text().splitlines()
    assert argv[2:5] == ["What is in the picture?", "474", "1"]
    staged = bench.vision_set["images"][0]["device_path"]
    assert (tmp_path / "mnn_vision-argv.txt.images").read_text() == f"{staged}\n"
    step = raw["vision_step"]
    assert {k: step["tool"][k] for k in wrote} == wrote
    assert step["phase_clock"]["vision"] == wrote["window"]
    assert step["tool"]["command"]["env"] == {"LD_LIBRARY_PATH": receipt["engines"]["e"]}
    # the image set and the tool are part of what the measurement is: another image, or
    # another mnn_vision, measures again
    measured = measured_vision(bench, EngineRecord.of(record))
    assert measured["images"] == [sha256_file(IMAGE)]
    assert measured["tool_sha256"] == sha256_file(tool_dir / "mnn_vision")
    assert raw["plan_key"] == key_of(specs["a"], bench)
    rebuilt = {**bench.vision_set, "tools": {"e": {"mnn_vision": "0" * 64}}}
    assert key_of(specs["a"], bench.with_vision_set(rebuilt)) != raw["plan_key"]


def key_of(spec: dict, bench) -> str:
    """The key run_schedule gives a measurement of spec under bench."""
    measured = {k: getattr(bench, k) for k in ("prompt_tokens", "generate_tokens", "warmup")}
    return measurement_key(spec, {**measured, "vision": measured_vision(bench, spec["engine"])})
