"""Validity: SME2 requirement per device, kernel-ran checks, and invalid verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import TINY_VL, design_of, full_variants, greedy_answers, pair_mode, section

from mnnrepro.analysis import verdict as vd
from mnnrepro.analysis.summary import summarize
from mnnrepro.analysis.validity import check, kernel_checks
from mnnrepro.engines.pairs import Pair, device_modes, modes_of, modes_record
from mnnrepro.engines.registry import EngineRecord

ON = EngineRecord.of({"engine": "sme2-on", "kind": "build", "sme2": {"sme2_kernel_count": 14}})
OFF = EngineRecord.of({"engine": "sme2-off", "kind": "build", "sme2": {"sme2_kernel_count": 0}})
VARIANTS = {"off": {"engine": "sme2-off"}, "on": {"engine": "sme2-on"}}
COMPARISON = {"baseline": "off", "treatment": "on", "tolerance": 0.1, "claims": {"prefill": 0.81}}
SME2_PHONE = {"device": "x300", "sme2": True, "cpu_features": ["sme2"]}
OLD_PHONE = {"device": "d9400", "sme2": False, "cpu_features": ["sve2", "i8mm"]}


def greedy(line_on, tokens_on=(1, 2, 3)):
    return {
        "off": {
            "answers": [{"prompt": "p", "tokens": [1, 2, 3]}],
            "engine": {"device_supports": "The device supports: sme2: 1"},
        },
        "on": {
            "answers": [{"prompt": "p", "tokens": list(tokens_on)}],
            "engine": {"device_supports": line_on},
        },
    }


def test_sme2_treatment_on_a_device_without_sme2_fails_early_unless_fallback():
    with pytest.raises(ValueError, match=r"`comparison\.on_non_sme2_device: fallback-check`"):
        pair_mode(ON, OLD_PHONE, "fail")
    assert pair_mode(ON, OLD_PHONE, "fallback-check") == "fallback"
    assert pair_mode(ON, SME2_PHONE, "fail") == "claim"
    assert pair_mode({"engine": "p", "kind": "prebuilt"}, OLD_PHONE, "fail") == "claim"


@pytest.mark.parametrize(
    ("ci", "expected"),
    [
        ((-0.1, 0.2), vd.NO_REGRESSION),  # lower bound exactly at -tolerance
        ((-0.1001, 0.3), vd.INCONCLUSIVE),
        ((-0.25, -0.05), vd.INCONCLUSIVE),
        ((-0.3, -0.1001), vd.REGRESSION),  # wholly below -tolerance
    ],
)
def test_fallback_verdict(ci, expected):
    assert vd.fallback_verdict(ci[0], ci[1], 0.1) == expected


def test_kernel_checks_static_and_runtime():
    engines = {"sme2-on": ON, "sme2-off": OFF}
    good = kernel_checks(
        greedy("The device supports: sme2: 1"),
        ("off", "on"),
        engines,
        full_variants(VARIANTS),
        SME2_PHONE,
    )
    assert [c["passed"] for c in good] == [True, True]
    # the "ON" build came out without SME2 kernels, and the device line says sme2: 0
    broken = {"sme2-on": EngineRecord.of({**OFF.as_written, "engine": "sme2-on"}), "sme2-off": OFF}
    swapped = kernel_checks(
        greedy("The device supports: sme2: 0"),
        ("off", "on"),
        broken,
        full_variants(VARIANTS),
        SME2_PHONE,
    )
    assert [c["passed"] for c in swapped] == [False, False]
    assert "treatment sme2-on: 0 MNN SME2 kernels" in swapped[0]["evidence"]


def table(gains, device="x300"):
    rng = np.random.default_rng(1)
    rows = []
    for block in range(8):
        base = 100 * np.exp(rng.normal(0, 0.02))
        for phase, gain in gains.items():
            rows.append(
                {
                    "device": device,
                    "model": "m",
                    "phase": phase,
                    "block": block,
                    "variant": "off",
                    "tps": base,
                    "emulated": False,
                }
            )
            rows.append(
                {
                    "device": device,
                    "model": "m",
                    "phase": phase,
                    "block": block,
                    "variant": "on",
                    "tps": base * (1 + gain) * np.exp(rng.normal(0, 0.02)),
                    "emulated": False,
                }
            )
    return pd.DataFrame(rows)


def claimed(bench: pd.DataFrame, config: dict) -> dict:
    """Every compared pair judged against its claim on every device of bench: the mode these
    tests choose (engines.pairs.modes_record decides it from records and facts in a run)."""
    pairs = Pair.compared(design_of(config))
    return {(p.names, device): "claim" for p in pairs for device in bench["device"].unique()}


CONFIG = {
    "experiment": "e",
    "comparison": COMPARISON,
    "variants": VARIANTS,
    "stats": {"seed": 1, "n_boot": 2000, "ci_level": 0.95, "target_half_width": 0.02},
}


def test_device_matrix_judges_a_non_sme2_device_by_no_regression():
    facts = {"x300": SME2_PHONE, "d9400": OLD_PHONE}
    config = {**CONFIG, "comparison": {**COMPARISON, "on_non_sme2_device": "fallback-check"}}
    engines = {"sme2-on": ON, "sme2-off": OFF}
    modes = device_modes([modes_record(design_of(config), engines, f) for f in facts.values()])
    assert modes == {(("off", "on"), "x300"): "claim", (("off", "on"), "d9400"): "fallback"}
    bench = pd.concat(
        [table({"prefill": 0.8, "decode": 0.1}), table({"prefill": 0.0, "decode": 0.0}, "d9400")]
    )
    ok = {"checks": [{"name": "gate", "passed": True, "evidence": ""}]}
    validity = {("x300", "m"): ok, ("d9400", "m"): ok}
    summary = summarize(bench, validity, design_of(config), modes).set_index(["device", "phase"])
    assert summary.loc[("d9400", "prefill"), "expectation"] == "no regression"
    assert summary.loc[("d9400", "prefill"), "verdict"] == vd.NO_REGRESSION
    assert summary.loc[("x300", "prefill"), "expectation"] == "claim"
    assert summary.loc[("x300", "prefill"), "verdict"] == vd.REPRODUCED


def test_broken_variant_is_invalid_with_the_reason(tiny_model, workflow_model, tmp_path):
    """A 'treatment' that runs a different model file (other weights: the tiny Qwen3-VL's
    text decoder): real greedy outputs disagree."""
    other = workflow_model("synth-tiny-vl", TINY_VL) / "mnn"
    answers = {}
    for name, model in (("off", tiny_model), ("on", other)):
        answers[name] = greedy_answers(model, ["你好"], tmp_path / f"{name}.json")
    engines = {"sme2-on": ON, "sme2-off": OFF}
    validity = check(
        answers,
        {"device": "host"},
        "m",
        design_of({"comparison": COMPARISON, "variants": VARIANTS}),
        {},  # no profiles: no check asks a pair's mode
        section("correctness", min_agreement=1.0),
        engines,
        full_variants(VARIANTS),
    )
    assert not validity["checks"][0]["passed"]
    bench = table({"prefill": 0.8, "decode": 0.1}, "host")
    summary = summarize(bench, {("host", "m"): validity}, design_of(CONFIG), claimed(bench, CONFIG))
    assert set(summary["verdict"]) == {vd.INVALID}
    assert summary["verdict_reason"].str.contains("correctness gate").all()


def with_again(bench: pd.DataFrame, factor: float) -> pd.DataFrame:
    again = bench[bench["variant"] == "off"].assign(variant="off-again")
    again["tps"] = (
        again["tps"] * factor * np.exp(np.random.default_rng(3).normal(0, 0.01, len(again)))
    )
    return pd.concat([bench, again])


@pytest.mark.parametrize(("factor", "invalid"), [(1.0, False), (1.10, True)])
def test_aa_control_must_contain_one(factor, invalid):
    """The baseline run twice: a 10 % 'speedup' of the baseline over itself is drift."""
    config = {**CONFIG, "comparison": {**COMPARISON, "aa_control": True}}
    ok = {"checks": [{"name": "gate", "passed": True, "evidence": ""}]}
    bench = with_again(table({"prefill": 0.8, "decode": 0.1}), factor)
    summary = summarize(bench, {("x300", "m"): ok}, design_of(config), claimed(bench, config))
    assert (summary["verdict"] == vd.INVALID).all() == invalid
    if invalid:
        assert summary["verdict_reason"].str.contains("A/A control").all()
    assert summary["aa_ci_low"].notna().all()


def test_aa_variant_runs_like_the_baseline():
    from mnnrepro.config import run_variants

    config = {
        "variants": {"off": {"engine": "e", "runtime": {"thread_num": 4}}, "on": {}},
        "comparison": {"baseline": "off", "aa_control": True},
    }
    assert run_variants(config)["off-again"] == config["variants"]["off"]


# ---- SME2 absent (x86 host builds), one binary masked at run time, several pairs ----------

X86_FILES = [{"path": "llm_bench", "sha256": "a" * 64}]
HOST_ON = EngineRecord.of(
    {"engine": "sme2-on", "kind": "build", "target_arch": "x86_64", "files": X86_FILES}
)
HOST_OFF = EngineRecord.of({**HOST_ON.as_written, "engine": "sme2-off"})
X86_HOST = {"device": "host", "sme2": False, "cpu_features": ["avx2"]}


def test_builds_for_a_cpu_without_sme2_are_judged_by_equality_never_the_claim():
    engines = {"sme2-on": HOST_ON, "sme2-off": HOST_OFF}
    assert pair_mode(HOST_ON, X86_HOST, "fail") == "equal"  # never raises
    checks = kernel_checks(
        greedy("The device supports: sme2: 0"),
        ("off", "on"),
        engines,
        full_variants(VARIANTS),
        X86_HOST,
    )
    assert [c["passed"] for c in checks] == [True]
    assert "SME2 absent on x86_64" in checks[0]["name"]
    assert "artifacts are byte-identical" in checks[0]["evidence"]
    on_host = modes_record(design_of(CONFIG), engines, X86_HOST)
    modes = device_modes([on_host])
    same = summarize(
        table({"prefill": 0.0, "decode": 0.01}, "host"),
        {
            ("host", "m"): check(
                greedy("x"),
                X86_HOST,
                "m",
                design_of({"comparison": COMPARISON, "variants": VARIANTS}),
                modes_of(on_host),
                section("correctness", min_agreement=1.0),
                engines,
                full_variants(VARIANTS),
            )
        },
        design_of(CONFIG),
        modes,
    )
    assert set(same["expectation"]) == {"no difference"}
    assert set(same["verdict"]) == {vd.NO_DIFFERENCE}
    assert same["claim_gain"].isna().all()
    faster = summarize(
        table({"prefill": 0.5, "decode": 0.5}, "host"),
        {("host", "m"): {"checks": []}},
        design_of(CONFIG),
        modes,
    )
    assert set(faster["verdict"]) == {vd.DIFFERS}


def test_x86_builds_that_are_not_byte_identical_fail_the_equality_check():
    """On x86 MNN_SME2 changes nothing: two builds whose files differ differ in something else
    (a flag, a compiler), which the pair would then measure as if it were SME2."""
    other = EngineRecord.of(
        {**HOST_OFF.as_written, "files": [{"path": "llm_bench", "sha256": "b" * 64}]}
    )
    (absent,) = kernel_checks(
        greedy("The device supports: sme2: 0"),
        ("off", "on"),
        {"sme2-on": HOST_ON, "sme2-off": other},
        full_variants(VARIANTS),
        X86_HOST,
    )
    assert not absent["passed"]
    assert "differ in ['llm_bench']" in absent["evidence"]
    assert absent["details"]["differing_files"] == ["llm_bench"]


MASK_VARIANTS = {**VARIANTS, "masked": {"engine": "sme2-on", "env": {"MNN_CPU_TARGET": "2"}}}


def masked_greedy(cpu_target_line):
    answers = greedy("The device supports: sme2: 1")
    answers["masked"] = {
        "answers": answers["on"]["answers"],
        "engine": {
            "device_supports": "The device supports: sme2: 1",
            "cpu_target": cpu_target_line,
        },
    }
    return answers


def test_one_binary_masked_at_run_time_must_say_sme2_0():
    engines = {"sme2-on": ON, "sme2-off": OFF}
    line = "MNN_CPU_TARGET=2 effective ARM features: fp16=1, i8sdot=1, i8mm=1, sme2=0"
    good = kernel_checks(
        masked_greedy(line), ("masked", "on"), engines, full_variants(MASK_VARIANTS), SME2_PHONE
    )
    assert [c["passed"] for c in good] == [True, True]
    assert "masked at run time in masked" in good[0]["name"]
    # a build without MNN_PIPELINE_PROFILE ignores MNN_CPU_TARGET: it prints no such line
    ignored = kernel_checks(
        masked_greedy(""), ("masked", "on"), engines, full_variants(MASK_VARIANTS), SME2_PHONE
    )
    assert not ignored[0]["passed"]
    assert "no MNN_CPU_TARGET line" in ignored[0]["evidence"]


def test_every_pair_of_comparison_also_is_judged_with_its_own_checks():
    comparison = {**COMPARISON, "also": [{"baseline": "masked", "treatment": "on"}]}
    config = {**CONFIG, "comparison": comparison, "variants": MASK_VARIANTS}
    bench = table({"prefill": 0.8, "decode": 0.1})
    masked = bench[bench["variant"] == "off"].assign(variant="masked")
    validity = check(
        masked_greedy(""),
        SME2_PHONE,
        "m",
        design_of({"comparison": comparison, "variants": MASK_VARIANTS}),
        modes_of(modes_record(design_of(config), {"sme2-on": ON, "sme2-off": OFF}, SME2_PHONE)),
        section("correctness", min_agreement=1.0),
        {"sme2-on": ON, "sme2-off": OFF},
        full_variants(MASK_VARIANTS),
    )
    both = pd.concat([bench, masked])
    summary = summarize(both, {("x300", "m"): validity}, design_of(config), claimed(both, config))
    by_pair = summary.groupby(["baseline", "treatment"])["verdict"].agg(set).to_dict()
    assert vd.INVALID not in by_pair[("off", "on")]  # its own checks passed
    assert by_pair[("masked", "on")] == {vd.INVALID}  # the mask did not take: that pair only


def test_precision_on_demand_reaches_the_summary_with_the_stopping_df():
    """bench.repetitions {min: 4, ...}: the summary's t interval of a run that stopped after 8
    blocks uses the first look's quantile, df = min - 1 = 3, not n - 1 = 7, and says so; a
    fixed number of repetitions uses n - 1."""
    from scipy import stats as sps

    bench = table({"prefill": 0.3, "decode": 0.1})
    ok = {("x300", "m"): {"checks": [{"name": "gate", "passed": True, "evidence": ""}]}}
    on_demand = {
        **CONFIG,
        "bench": {"repetitions": {"min": 4, "max": 20, "target_half_width": 0.02}},
    }
    row = (
        summarize(bench, ok, design_of(on_demand), claimed(bench, CONFIG))
        .set_index("phase")
        .loc["prefill"]
    )
    assert row["interval"] == "t on log ratios (df 3, after stopping)"
    part = bench[bench["phase"] == "prefill"].pivot(index="block", columns="variant", values="tps")
    log_ratios = np.log(part["on"] / part["off"]).to_numpy()
    assert row["n_pairs"] == len(log_ratios) == 8

    def high(df):
        half = sps.t.ppf(0.975, df) * log_ratios.std(ddof=1) / np.sqrt(len(log_ratios))
        return float(np.exp(log_ratios.mean() + half))

    assert row["ci_high"] == pytest.approx(high(3))
    fixed = summarize(
        bench, ok, design_of({**CONFIG, "bench": {"repetitions": 8}}), claimed(bench, CONFIG)
    )
    fixed_row = fixed.set_index("phase").loc["prefill"]
    assert fixed_row["interval"] == "t on log ratios"
    assert fixed_row["ci_high"] == pytest.approx(high(7)) and fixed_row["ci_high"] < row["ci_high"]


def test_firmware_that_changes_mid_experiment_makes_the_pair_invalid():
    """MNN #4828: SME2 garbage on old vivo X300 firmware, fixed by a system update. Blocks
    measured on two builds of the system software are not one comparison."""
    from mnnrepro.analysis.summary import run_problems

    bench = table({"prefill": 0.8, "decode": 0.1})
    bench["build_fingerprint"] = "vivo/x300:16/BP2A.1/1:user/release-keys"
    assert run_problems(bench, ("off", "on")) == []
    bench.loc[bench["block"] >= 5, "build_fingerprint"] = "vivo/x300:16/BP2A.2/2:user/release-keys"
    (problem,) = run_problems(bench, ("off", "on"))
    assert "system software changed during the experiment (2 build fingerprints" in problem
    checks = {("x300", "m"): {"checks": [{"name": "g", "passed": True, "evidence": ""}]}}
    summary = summarize(bench, checks, design_of(CONFIG), claimed(bench, CONFIG))
    assert set(summary["verdict"]) == {vd.INVALID}


def test_a_pair_without_a_mode_on_a_device_is_never_judged_as_if_claimed():
    """How a pair is judged on a device is decided from its records and facts
    (engines.pairs.modes_record); a mode that was not decided stops the summary."""
    bench = table({"prefill": 0.8, "decode": 0.1})
    checks = {("x300", "m"): {"checks": []}}
    with pytest.raises(ValueError, match=r"no mode for pair \('off', 'on'\) on device x300"):
        summarize(bench, checks, design_of(CONFIG), {})


@pytest.mark.parametrize(("hot_start", "invalid"), [("invalid", True), ("flag", False)])
def test_an_invocation_started_on_a_hot_device_is_counted_and_judged_as_configured(
    hot_start, invalid
):
    """The thermal gate timed out hot before one invocation (bench.csv `thermal_cool` False)."""
    bench = table({"prefill": 0.8, "decode": 0.1}).assign(thermal_cool=True)
    first = bench.index[(bench["variant"] == "on") & (bench["block"] == 0)]
    bench.loc[first, "thermal_cool"] = False
    ok = {"checks": [{"name": "gate", "passed": True, "evidence": ""}]}
    config = {**CONFIG, "bench": {"hot_start": hot_start}}
    summary = summarize(bench, {("x300", "m"): ok}, design_of(config), claimed(bench, config))
    assert (summary["hot_starts"] == 1).all() and summary["thermal_ungated"].isna().all()
    assert (summary["verdict"] == vd.INVALID).all() == invalid
    if invalid:
        assert summary["verdict_reason"].str.contains("started above bench.max_temp_c").all()


def test_two_sides_that_measured_decode_differently_make_the_pair_invalid(root):
    """A real quickstart table (benchmarks/results/ci_halfwidth-bench.csv: decode after the
    256-token prompt on both sides) passes; the same with one side's decode from an empty
    context, as llm_bench without -kv true measures it, is two measurements under one name."""
    from mnnrepro.analysis.summary import run_problems

    bench = pd.read_csv(root / "benchmarks/results/ci_halfwidth-bench.csv")
    pair = tuple(sorted(set(bench["variant"])))
    assert set(bench[bench["phase"] == "decode"]["context_start"]) == {256}
    assert not [p for p in run_problems(bench, pair) if "decode" in p]
    empty = (bench["variant"] == pair[1]) & (bench["phase"] == "decode")
    bench.loc[empty, "context_start"] = 0
    (problem,) = [p for p in run_problems(bench, pair) if "decode" in p]
    assert problem.startswith("the two sides measured decode differently") and "256" in problem
