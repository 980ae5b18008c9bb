"""llm_bench parsers on every real capture in tests/data/llm_bench/ (see PROVENANCE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import full_bench, full_runtime

from mnnrepro.engines.base import GreedyAsk
from mnnrepro.engines.mnn_source import llmbench
from mnnrepro.engines.registry import EngineRecord

DATA = Path(__file__).resolve().parents[1] / "data" / "llm_bench"
PAIRS = sorted(p.name.removesuffix(".stdout.txt") for p in DATA.glob("llm_bench_*.stdout.txt"))


def test_every_capture_is_covered():
    assert set(PAIRS) == {
        "llm_bench_out361",
        "llm_bench_kv361",
        "llm_bench_pg361",
        "llm_bench_q06kv361",
        "llm_bench_out",
        "llm_bench_pg",
        "llm_bench_multi",
    }


@pytest.mark.parametrize("stem", PAIRS)
def test_table_and_json_agree(stem):
    text = (DATA / f"{stem}.stdout.txt").read_text()
    doc = (DATA / f"{stem}.json").read_text()
    table, rows = llmbench.parse_table(text), llmbench.parse_json(doc)
    llmbench.cross_check(table, rows)
    assert llmbench.supports_line(text).startswith("The device supports:")
    assert rows, f"{stem}: no prefill or decode row parsed"  # else the loop checks nothing
    for row in rows:  # every JSON speed came through unchanged
        assert row["tps"] > 0 and row["phase"] in ("prefill", "decode")
    raw = json.loads(doc)["results"]
    speeds = {round(r.get("tps", r.get("prefill_tps", 0)), 6) for r in raw}
    assert {round(r["tps"], 6) for r in rows if r["phase"] == "prefill"} <= speeds | {
        round(r.get("prefill_tps", 0), 6) for r in raw
    }


def test_kv_format_of_361_splits_prefill_and_decode():
    rows = llmbench.parse_table((DATA / "llm_bench_q06kv361.stdout.txt").read_text())
    assert [(r["phase"], r["tokens"], r["tps"], r["std"]) for r in rows] == [
        ("prefill", 256, 168.87, 15.37),
        ("decode", 64, 35.96, 3.81),
    ]


def test_pg_of_361_is_one_combined_number():
    rows = llmbench.parse_table((DATA / "llm_bench_pg361.stdout.txt").read_text())
    combined = [r for r in rows if r["phase"] == "combined"]
    assert [(r["test"], r["tokens"], r["tps"]) for r in combined] == [("pp128+tg32", 160, 14770.30)]
    assert not [
        r
        for r in llmbench.parse_json((DATA / "llm_bench_pg361.json").read_text())
        if r["prompt_len"] == 128
    ]


def test_pg_after_361_has_split_speeds():
    rows = llmbench.parse_table((DATA / "llm_bench_pg.stdout.txt").read_text())
    assert [(r["phase"], r["tps"]) for r in rows if r["test"] == "pp128+tg32"] == [
        ("prefill", 26878.14),
        ("decode", 1438.74),
    ]


def test_multi_configuration_table_keeps_threads_per_row():
    rows = llmbench.parse_table((DATA / "llm_bench_multi.stdout.txt").read_text())
    assert [r["threads"] for r in rows] == [2, 2, 1, 1, 2, 2, 1, 1]


@pytest.mark.parametrize("text", ["no table here", "| a | b |\n|---|---|\n| 1 | 2 |"])
def test_garbage_is_a_clear_error(text):
    with pytest.raises(llmbench.LlmBenchParseError):
        llmbench.parse_table(text)


def test_build_args_one_configuration_per_invocation():
    args = llmbench.build_args("./llm_bench", "m/config.json", 512, 128, 4, 2, "r.json")
    assert args == [
        "./llm_bench",
        "-m",
        "m/config.json",
        "-t",
        "4",
        "-c",
        "2",
        "-p",
        "512",
        "-n",
        "128",
        "-rep",
        "1",
        "-j",
        "r.json",
        "-kv",
        "true",
        "-fa",
        "1",
    ]


def test_built_engine_command_sets_its_own_library_path():
    from mnnrepro.engines.mnn_source.kind import BuiltEngine

    engine = BuiltEngine(
        EngineRecord.of({"engine": "sme2-on", "kind": "build"}),
        {"engines": {"sme2-on": "/data/local/tmp/mnn-repro/engines/sme2-on"}},
    )

    class Phone:
        pass

    bench = full_bench(prompt_tokens=512, generate_tokens=128)
    runtime = full_runtime({"thread_num": 4, "precision": "low"})  # as a Variant's
    argv, env = engine.bench_command(Phone(), "/m/config.json", runtime, bench, "/s/out.json")
    assert argv[0] == "/data/local/tmp/mnn-repro/engines/sme2-on/llm_bench"
    assert argv[argv.index("-t") + 1] == "4" and argv[argv.index("-c") + 1] == "2"
    assert argv[argv.index("-rep") + 1] == "1" and "-kv" in argv
    assert env == {"LD_LIBRARY_PATH": "/data/local/tmp/mnn-repro/engines/sme2-on"}


def test_built_engine_reads_a_real_capture(tmp_path):
    """The reader on llm_bench 3.6.1's real -kv output (JSON + table, cross-checked)."""
    from mnnrepro.devices.base import CommandResult
    from mnnrepro.devices.local import LocalDevice
    from mnnrepro.engines.mnn_source.kind import BuiltEngine

    out = tmp_path / "out.json"
    out.write_text((DATA / "llm_bench_q06kv361.json").read_text())
    stdout = (DATA / "llm_bench_q06kv361.stdout.txt").read_text()
    engine = BuiltEngine(
        EngineRecord.of({"engine": "e", "kind": "build", "version": "x"}), {"engines": {"e": "/e"}}
    )
    device = LocalDevice("host")
    payload = engine.read_bench(device, CommandResult([], 0, stdout, "", 1.0), str(out))
    device.close()
    phases = {r["phase"]: r for r in payload["results"]}
    assert phases["prefill"]["tokens"] == 256 and phases["decode"]["tokens"] == 64
    assert phases["prefill"]["tps"] == json.loads(out.read_text())["results"][0]["prefill_tps"]
    assert payload["engine"]["device_supports"].startswith("The device supports:")


def test_the_gate_the_benchmark_and_the_vision_tool_of_a_built_engine_get_identical_settings(
    tmp_path,
):
    """The benchmark's llm_bench flags, the gate's config.json and the vision phase's (the
    mnn_vision command, llm_bench takes no images) carry the same runtime.

    `mnn_greedy` is replaced by a shell script that keeps the config it was given and answers
    one token: this test is about what each process is told, not about the engine.
    """
    import json
    import stat

    from mnnrepro.devices.local import LocalDevice
    from mnnrepro.engines.mnn_source.kind import LEVELS, BuiltEngine, llm_bench_config

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"llm_model": "llm.mnn", "thread_num": 9}))
    (model / "llm_config.json").write_text(json.dumps({"image_pad": 151655}))
    tool_dir = tmp_path / "tool"
    tool_dir.mkdir()
    seen = tmp_path / "seen-config.json"
    tool = tool_dir / "mnn_greedy"
    tool.write_text(
        f'#!/bin/sh\ncp "$1" {seen}\n'
        'printf \'{"answers": [{"index": 0, "prompt_tokens": 3, "tokens": [1], '
        '"steps": [{"mean": 0, "sd": 1, "top": [[1, 2.0]]}]}]}\' > "$4"\n'
    )
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    runtime = full_runtime(
        {"thread_num": 2, "precision": "normal", "memory": "high", "power": "high"}
    )
    receipt = {
        "engines": {"e": str(tmp_path / "bin")},
        "gate_tools": {"e": str(tool_dir)},
        "model_config": str(model / "config.json"),
    }
    engine = BuiltEngine(EngineRecord.of({"engine": "e", "kind": "build"}), receipt)
    device = LocalDevice("host")
    try:
        engine.greedy(device, receipt, GreedyAsk(runtime, ["hi"], 1, 60, prompt_tokens=512))
        argv, _ = engine.bench_command(
            device,
            receipt["model_config"],
            runtime,
            full_bench(prompt_tokens=512, generate_tokens=8),
            "o",
        )
        vision_set = {"text": "What is it?", "images": [{"device_path": "/i/a.png"}]}
        bench = full_bench(prompt_tokens=512, warmup=1).with_vision_set(vision_set)
        vision, _ = engine.vision_command(device, receipt, runtime, bench, "v.json")
        images = Path(vision[2]).read_text()
        vision_config = json.loads(Path(vision[1]).read_text())
        assert (
            engine.vision_command(device, receipt, runtime, bench.with_vision_set(None), "v")
            is None
        )
    finally:
        device.close()
    gate = json.loads(seen.read_text())
    assert vision_config == gate  # the same engine settings; both give one token
    assert Path(vision[0]).name == "mnn_vision" and Path(vision[0]).parent == tool_dir
    assert images == "/i/a.png\n" and vision[3:] == ["What is it?", "151655", "1", "v.json"]
    told = {flag: argv[argv.index(flag) + 1] for flag in ("-t", "-c", "--memory", "--power", "-a")}
    assert told == {
        "-t": str(gate["thread_num"]),
        "-c": str(LEVELS[gate["precision"]]),
        "--memory": str(LEVELS[gate["memory"]]),
        "--power": str(LEVELS[gate["power"]]),
        "-a": gate["backend_type"],
    }
    assert gate["thread_num"] == 2  # the variant's value, not the model's config.json (9)
    # and everything else llm_bench forces on the engine for P = 512
    assert {k: gate[k] for k in llm_bench_config(runtime, 512)} == llm_bench_config(runtime, 512)
    assert gate["sampler_type"] == "greedy" and gate["base_dir"] == f"{model}/"


def test_mnns_sme2_settings_reach_llm_bench_and_the_gate_alike():
    """A variant's cpu_sme_core_num and division ratio: llm_bench's -scn and -mr, and the
    gate's config.json the same values; absent, llm_bench keeps its defaults (2, 41), which
    the gate's config spells out."""
    from mnnrepro.engines.mnn_source.kind import BuiltEngine, llm_bench_config

    engine = BuiltEngine(
        EngineRecord.of({"engine": "on", "kind": "build"}), {"engines": {"on": "/e"}}
    )
    bench = full_bench(prompt_tokens=64, generate_tokens=8)
    runtime = full_runtime(
        {"thread_num": 4, "cpu_sme_core_num": 1, "cpu_sme2_neon_division_ratio": 49}
    )
    argv, _ = engine.bench_command(None, "/m/config.json", runtime, bench, "/s/out.json")
    assert argv[argv.index("-scn") + 1] == "1" and argv[argv.index("-mr") + 1] == "49"
    gate = llm_bench_config(runtime, 64)
    assert (gate["cpu_sme_core_num"], gate["cpu_sme2_neon_division_ratio"]) == (1, 49)
    plain = full_runtime({"thread_num": 4})
    argv, _ = engine.bench_command(None, "/m/config.json", plain, bench, "/s/o.json")
    assert "-scn" not in argv and "-mr" not in argv
    gate = llm_bench_config(plain, 64)
    assert (gate["cpu_sme_core_num"], gate["cpu_sme2_neon_division_ratio"]) == (2, 41)
