"""What ran, not what was asked: the settings an engine reports, the decode context, the CPU
frequency around each invocation, and a speed the invocation's wall time cannot explain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from mnnrepro.analysis.summary import run_problems
from mnnrepro.analysis.tables import cpufreq_summary, settings_mismatch, timing_plausible
from mnnrepro.devices.base import parse_cpufreq
from mnnrepro.engines.mnn_source.llmbench import settings_ran
from mnnrepro.runs.staging import RUNNER

CAPTURED = Path(__file__).resolve().parents[2] / "tests" / "data" / "llm_bench"


def test_llm_bench_says_what_it_ran():
    """The real llm_bench 3.6.1 -kv true JSON (captured): its own header, not our argv."""
    text = (CAPTURED / "llm_bench_kv361.json").read_text()
    assert settings_ran(text) == {
        "thread_num": 2,
        "precision": "low",
        "memory": "low",
        "power": "normal",
        "backend_type": "cpu",
        "warmup": 1,
    }


def test_a_setting_that_ran_differently_is_named():
    asked = {"thread_num": 4, "precision": "low", "memory": "low"}
    assert settings_mismatch(asked, {"thread_num": 4, "precision": "Low"}) == ""
    assert settings_mismatch(asked, {"thread_num": 2, "precision": "low"}) == (
        "thread_num: asked 4, ran 2"
    )


def test_an_engine_time_the_wall_time_cannot_hold_is_flagged():
    results = [{"phase": "prefill", "seconds": 1.0}, {"phase": "decode", "seconds": 2.0}]
    assert timing_plausible({"wall_s": 5.0, "results": results}) is True
    assert timing_plausible({"wall_s": 2.5, "results": results}) is False
    assert timing_plausible({"results": results}) is None
    # the time to the first token holds the encoder's and the image prefill's: counted once
    image = [
        {"phase": "vision", "seconds": 1.0},
        {"phase": "image_prefill", "seconds": 0.5},
        {"phase": "first_token", "seconds": 1.6},
    ]
    assert timing_plausible({"wall_s": 5.0, "results": results + image}) is True
    assert timing_plausible({"wall_s": 4.0, "results": results + image}) is False


def test_such_invocations_make_the_pair_invalid_naming_them():
    group = pd.DataFrame(
        {
            "variant": ["a", "b", "a", "b"],
            "block": [0, 0, 1, 1],
            "settings_mismatch": ["", "thread_num: asked 4, ran 2", "", ""],
            "timing_plausible": [True, True, False, True],
        }
    )
    problems = run_problems(group, ("a", "b"))
    assert problems[0] == (
        "settings that ran differ from the config (b, 1 invocations): thread_num: asked 4, ran 2"
    )
    assert problems[1].startswith("engine-reported time exceeds the invocation's wall time in 1")


def test_cpufreq_per_core_and_its_summary():
    cores = parse_cpufreq("cpu0 schedutil 2000000\ncpu1 performance 3200000\ncpu2  \n")
    assert cores == {
        "cpu0": {"governor": "schedutil", "cur_khz": 2000000},
        "cpu1": {"governor": "performance", "cur_khz": 3200000},
    }
    record = {"cpufreq_before": cores, "cpufreq_after": {"cpu0": cores["cpu0"]}}
    assert cpufreq_summary(record) == {
        "governor": "performance/schedutil",
        "freq_before_mhz": 3200,
        "freq_after_mhz": 2000,
    }
    assert cpufreq_summary({}) == {"governor": "", "freq_before_mhz": None, "freq_after_mhz": None}


def test_the_python_runner_decodes_in_the_prompts_context(tiny_model, tmp_path):
    """As llm_bench -kv true: N decode tokens right after the P-token prompt (MNN's own
    context length says P, then P + N), warm-ups counted as run."""
    out = tmp_path / "bench.json"
    subprocess.run(
        [
            *(sys.executable, str(RUNNER), "bench", "--config", str(tiny_model / "config.json")),
            *("--runtime", '{"thread_num": 1}', "--out", str(out), "--prompt-tokens", "24"),
            *("--generate-tokens", "6", "--warmup", "2"),
        ],
        check=True,
        capture_output=True,
    )
    payload = json.loads(out.read_text())
    prefill, decode = payload["results"]
    assert (prefill["context_start"], decode["context_start"]) == (0, 24)
    assert decode["tokens"] == 6
    assert payload["context"] == {"after_prefill": 24, "after_decode": 30}
    assert payload["ran"] == {"thread_num": 1, "warmup": 2} and payload["warmup"] == 2


def test_the_engine_feature_line_is_read_as_values_not_as_a_mention():
    """MNN prints `sme2: 0` and `sme2: 1` alike: a check for the word passes on both."""
    from mnnrepro.engines.device_io import supported_features

    captured = (CAPTURED / "llm_bench_kv361.stdout.txt").read_text().splitlines()
    line = next(x for x in captured if "The device supports" in x)
    assert "sme2" in line and supported_features(line)["sme2"] is False  # an x86 capture
    assert supported_features(line.replace("sme2: 0", "sme2: 1"))["sme2"] is True
    assert supported_features("no feature line") == {}
