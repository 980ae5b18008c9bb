"""The SME mask (a variant's `hide_sme`: toolchain/sme_mask, preloaded): its pair's checks, the
plan's refusals, and the environment its variants' processes get. The library itself hides
SME from a real arm64 process under QEMU in tests/workflow/test_emulation_workflow.py, and a
masked variant runs through the whole workflow in tests/workflow/test_control.py."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import design_of, full_variants, llama_record, section

from mnnrepro.analysis.attribution import execution_checks
from mnnrepro.analysis.one_binary import mask_checks, seen_check
from mnnrepro.config import ConfigError
from mnnrepro.design import design_of_variant
from mnnrepro.engines.llamacpp.kind import LlamaCppEngine
from mnnrepro.engines.pairs import CLAIM, Pair
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.plan.checks import check
from mnnrepro.runs.raw_files import variant_specs
from mnnrepro.runs.staging import process_env

VARIANTS = {
    "hidden": {"engine": "llama", "hide_sme": True},
    "default": {"engine": "llama"},
}
PAIR = ("hidden", "default")
LIBRARY = "libggml-cpu.so"
SME2_KERNEL = "kai_run_matmul_clamp_f32_qsi8d32p1vlx4_qsi4c32p4vlx4_1vlx4vl_sme2_mopa"
SME2 = {"device": "qemu-sme2", "sme2": True}
LLAMA = llama_record()  # an arm64 build with KleidiAI's SME kernels


def mnn(sme2_kernels=14):
    return EngineRecord.of(
        {
            "engine": "mnn-on",
            "kind": "build",
            "target_arch": "aarch64",
            "sme2": {"sme2_kernel_count": sme2_kernels},
            "files": [],
        }
    )


def answers(**chosen: bool) -> dict:
    """What each variant's engine said at the gate: llama.cpp whether KleidiAI chose SME, MNN
    its feature line."""
    return {
        v: {
            "engine": {
                "kleidiai_sme": sme,
                "device_supports": f"The device supports: i8sdot:1, fp16:1, i8mm: 1, sve2: 1, "
                f"sme2: {int(sme)}",
            }
        }
        for v, sme in chosen.items()
    }


def passed(checks: list[dict]) -> list[bool]:
    return [c["passed"] for c in checks]


def test_the_mask_pair_passes_only_with_the_mask_in_the_baseline_alone_of_one_binary():
    variants = full_variants(VARIANTS)
    good = mask_checks(answers(hidden=False, default=True), PAIR, LLAMA, LLAMA, variants, SME2)
    assert passed(good) == [True, True, True]
    assert "hide_sme: hidden=True, default=False" in good[0]["evidence"]
    # the mask on both: nothing is compared
    both = full_variants({**VARIANTS, "default": {"engine": "llama", "hide_sme": True}})
    assert not mask_checks(answers(hidden=False, default=True), PAIR, LLAMA, LLAMA, both, SME2)[0][
        "passed"
    ]
    # two binaries are not the mask pair
    other = llama_record(engine="other")
    two = mask_checks(answers(hidden=False, default=True), PAIR, other, LLAMA, variants, SME2)
    assert not two[0]["passed"]
    # the engine chose its SME kernels under the mask: it learns about SME another way
    leaked = mask_checks(answers(hidden=True, default=True), PAIR, LLAMA, LLAMA, variants, SME2)
    assert passed(leaked) == [True, True, False]
    # a build without SME kernels: the mask hides nothing the pair is about
    assert not mask_checks(
        answers(hidden=False, default=False),
        PAIR,
        llama_record(count=0),
        llama_record(count=0),
        variants,
        SME2,
    )[1]["passed"]


def test_on_x86_the_mask_pair_expects_no_sme_kernels_and_asks_no_engine():
    x86 = llama_record(arch="x86_64", count=0)
    variants = full_variants(VARIANTS)
    checks = mask_checks(answers(hidden=False, default=False), PAIR, x86, x86, variants, {})
    assert passed(checks) == [True, True]
    wrong = llama_record(arch="x86_64", count=3)  # SME kernels in an x86 build: another build
    assert not mask_checks({}, PAIR, wrong, wrong, variants, {})[1]["passed"]


def test_an_engine_that_reports_no_choice_is_judged_by_the_sme2_its_feature_line_saw():
    variants = full_variants(
        {"hidden": {"engine": "mnn-on", "hide_sme": True}, "default": {"engine": "mnn-on"}}
    )
    seen = mask_checks(answers(hidden=False, default=True), PAIR, mnn(), mnn(), variants, SME2)
    assert passed(seen) == [True, True, True]
    assert "sme2: 0" in seen[2]["evidence"]
    unseen = mask_checks(answers(hidden=True, default=True), PAIR, mnn(), mnn(), variants, SME2)
    assert passed(unseen) == [True, True, False]
    # ONNX Runtime's runners print what cpuinfo reads, in their own words
    line = "The process supports (AT_HWCAP2, what cpuinfo reads): sme:{0}, sme2:{0}"
    ort = {
        v: {"engine": {"device_supports": line.format(sme)}}
        for v, sme in (("hidden", 0), ("default", 1))
    }
    assert seen_check(ort, PAIR)["passed"]
    assert not seen_check({**ort, "hidden": ort["default"]}, PAIR)["passed"]
    off_build = mask_checks(
        answers(hidden=False, default=True), PAIR, mnn(0), mnn(0), variants, SME2
    )
    assert passed(off_build)[1] is False  # MNN_SME2=OFF: no kernels of MNN's own to hide


def profile(sme2_blocks: int) -> dict:
    """A QEMU profile of llama.cpp's CPU library: 100 executed blocks in a NEON kernel, and
    sme2_blocks in a kernel the build lists as SME2."""
    rows = [{"dso": LIBRARY, "symbol": "ggml_gemm_q4_0_4x4_q8_0", "count": 100}]
    rows += [{"dso": LIBRARY, "symbol": SME2_KERNEL, "count": sme2_blocks}] if sme2_blocks else []
    return {
        "unit": "executed blocks",
        "libraries": [LIBRARY],
        "sme2_kernels": [SME2_KERNEL],
        "rows": rows,
        "total": 100 + sme2_blocks,
    }


def test_a_stack_that_runs_sme2_kernels_under_the_mask_is_named_by_the_check_of_what_ran():
    design = design_of(
        {
            "variants": {v: design_of_variant(s) for v, s in VARIANTS.items()},
            "comparison": {"baseline": "hidden", "treatment": "default"},
        }
    )
    (pair,) = Pair.compared(design)
    assert pair.masked
    attribution = section("attribution", min_sme2_share=0.05, max_unresolved_share=0.5)
    engines = {"llama": LLAMA}
    clean = {
        (v, p): profile(0 if v == "hidden" else 9) for v in PAIR for p in ("prefill", "decode")
    }
    checks = execution_checks(clean, pair, engines, CLAIM, attribution)
    assert checks[-1]["passed"] and "under the SME mask" not in checks[-1]["evidence"]
    leaked = {**clean, ("hidden", "prefill"): profile(4)}
    check_of_what_ran = execution_checks(leaked, pair, engines, CLAIM, attribution)[-1]
    assert not check_of_what_ran["passed"]
    assert (
        "engine llama (llamacpp) ran SME2 kernels under the SME mask"
        in (check_of_what_ran["evidence"])
    )


@pytest.fixture
def control(root) -> dict:
    return yaml.safe_load((root / "tests/workflow/config-control.yaml").read_text())


def test_a_mask_on_a_kind_it_cannot_reach_is_refused_naming_the_variant(control, monkeypatch):
    check(copy.deepcopy(control), local_paths=False, fill_defaults=True)  # llama.cpp: reached
    monkeypatch.setattr(LlamaCppEngine, "sme_mask_misses", "reads /proc/self/auxv")
    with pytest.raises(ConfigError) as refused:
        check(copy.deepcopy(control), local_paths=False, fill_defaults=True)
    assert str(refused.value).count("\n") == 0
    assert "`variants.llama-sme-hidden.hide_sme`: engine llama (llamacpp) reads /proc/self/" in (
        str(refused.value)
    )


def test_a_phone_that_hides_sme_needs_the_pinned_ndk_for_its_mask(control):
    phone = copy.deepcopy(control)
    phone["devices"] = {"phone": {"adb": {"serial": "X"}}}
    phone.get("toolchains", {}).pop("ndk", None)
    with pytest.raises(ConfigError, match=r"`toolchains.ndk`: variants \['llama-sme-hidden'\]"):
        check(phone, local_paths=False, fill_defaults=True)


def test_a_masked_variant_preloads_the_staged_mask_and_carries_its_sha256():
    mask = {"device_path": "/w/tools/sme-mask/libsme_mask.so", "sha256": "ab" * 32}
    receipt = {"device": "d", "sme_mask": mask}
    specs = variant_specs(full_variants(VARIANTS), {"llama": LLAMA}, "0" * 64, receipt)
    assert specs["hidden"]["hide_sme"] and specs["hidden"]["sme_mask_sha256"] == "ab" * 32
    assert "hide_sme" not in specs["default"] and "sme_mask_sha256" not in specs["default"]
    env = process_env(specs["hidden"], {"LD_LIBRARY_PATH": "/w/e"}, receipt)
    assert env == {"LD_LIBRARY_PATH": "/w/e", "LD_PRELOAD": "/w/tools/sme-mask/libsme_mask.so"}
    assert "LD_PRELOAD" not in process_env(specs["default"], {}, receipt)
    with pytest.raises(ValueError, match="staged no SME mask"):
        process_env(specs["hidden"], {}, {"device": "d"})
