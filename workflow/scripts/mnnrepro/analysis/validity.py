"""Validity checks of one device x model comparison, each with its evidence."""

from __future__ import annotations

from mnnrepro.analysis.attribution import execution_checks
from mnnrepro.analysis.correctness import TEACHER_FORCED_RULE, compare_answers
from mnnrepro.analysis.divergence import GateRule
from mnnrepro.analysis.engine_tests import engine_tests_check
from mnnrepro.analysis.one_binary import mask_checks, switch_checks
from mnnrepro.design import Design
from mnnrepro.engines.device_io import supported_features
from mnnrepro.engines.pairs import Pair, PairModes
from mnnrepro.sections import Attribution, Correctness


def correctness_check(greedy: dict, pair: tuple[str, str], correctness: Correctness) -> dict:
    base, treat = pair
    result = compare_answers(
        greedy[base],
        greedy[treat],
        correctness.min_agreement,
        GateRule.of(correctness),
        greedy[treat].get("teacher_forced", {}).get(base),
    )
    parts = []
    for row in result["prompts"]:
        detail = f": {row['reason']}" if row["reason"] else ""
        if row["teacher_forced"]:
            drift = row["max_logit_diff_sd"]
            parts.append(
                f"{row['prompt']!r}: {row['kind']}, teacher-forced over {row['steps_compared']} "
                f"steps, {row['differing_steps']} top-1 differences, logits within "
                f"{'-' if drift is None else f'{drift:.3g}'} SDs{detail} (free-running: "
                f"{row['agree']}/{row['tokens']} leading tokens agree)"
            )
        else:
            parts.append(
                f"{row['prompt']!r}: {row['kind']}, {row['agree']}/{row['tokens']} leading "
                f"tokens agree{detail} (free-running only: judged at the first divergence)"
            )
    how = "teacher-forced" if result["rule"] == TEACHER_FORCED_RULE else "greedy"
    images = sum(1 for a in greedy[treat]["answers"] if a.get("image_sha256"))
    parts.append(
        f"{images} image prompt(s) through the vision encoder"
        if images
        else "no image prompt (text-only model)"
    )
    return {
        "name": f"correctness gate ({how} token ids, {treat} vs {base})",
        "pair": list(pair),
        "passed": result["passed"],
        "evidence": "; ".join(parts) + f"; required agreement {result['min_agreement']:.0%}",
        "details": result,
    }


def runtime_features_check(greedy: dict, pair: tuple[str, str]) -> dict:
    lines = {v: greedy[v]["engine"].get("device_supports", "") for v in pair}
    return {
        "name": "engine feature line captured",
        "pair": list(pair),
        "passed": all(lines.values()),
        "evidence": "; ".join(f"{v}: {line or 'missing'}" for v, line in lines.items()),
        "details": lines,
    }


def differing_files(a: dict, b: dict) -> list[str]:
    """Artifacts whose content differs between two engine records (by sha256)."""
    left = {f["path"]: f["sha256"] for f in a.files}
    right = {f["path"]: f["sha256"] for f in b.files}
    return sorted(p for p in left.keys() | right.keys() if left.get(p) != right.get(p))


def kernel_checks(
    greedy: dict, pair: tuple[str, str], engines: dict[str, dict], variants: dict, facts: dict
) -> list[dict]:
    """Did the treatment's SME2 kernels exist (build) and could they run (device line)?

    Three cases: two builds for arm64 (ON has MNN's SME2 kernels, OFF none); two builds for
    an architecture without SME2 (x86: MNN_SME2=ON builds nothing extra, both must have none
    and the expectation is equality); one binary run twice (SME2 masked at run time in the
    baseline by MNN_CPU_TARGET, which must say `sme2=0`).
    """
    base_variant, treat_variant = pair
    base = engines[variants[base_variant].engine]
    treat = engines[variants[treat_variant].engine]
    if variants[base_variant].hide_sme or variants[treat_variant].hide_sme:
        return mask_checks(greedy, pair, base, treat, variants, facts)
    if treat.kind.sme_switch:
        return switch_checks(greedy, pair, base, treat, variants, facts)
    if not any(r.kind.carries_sme2_kernels(r) for r in (base, treat)):
        return []  # e.g. prebuilt engines: the comparison is not about kernels of their own
    checks, final = static_kernel_checks(greedy, pair, base, treat, variants)
    if final:  # SME2 cannot exist for these builds: nothing can run either
        return checks
    engine = greedy[treat_variant]["engine"]
    line, masked = engine.get("device_supports", ""), engine.get("cpu_target", "")
    if facts.get("sme2"):
        checks.append(
            {
                "name": f"SME2 available to {treat_variant} at run time",
                "pair": list(pair),
                "passed": supported_features(line).get("sme2") is True and "sme2=0" not in masked,
                "evidence": f"{treat_variant} printed {line or 'no feature line'!r}"
                + (f" and {masked!r}" if masked else ""),
                "details": {"line": line, "cpu_target": masked},
            }
        )
    return checks


def static_kernel_checks(greedy, pair, base: dict, treat: dict, variants: dict):
    """What the builds hold: the baseline masked at run time (one binary), no SME2 on either
    (an architecture without it: the checks end there, True), or SME2 kernels in the treatment
    only. Returns (checks, whether they are all there is to check)."""
    count = {
        "treatment": treat.kind.sme_kernel_count(treat),
        "baseline": base.kind.sme_kernel_count(base),
    }
    checks = []
    if base.name == treat.name:
        checks.append(cpu_target_check(greedy, pair, variants))
    elif treat.kind.sme2_impossible(treat):
        differ = differing_files(base, treat)
        same = "are byte-identical" if not differ else f"differ in {differ}"
        checks.append(
            {
                "name": f"SME2 absent on {treat.target_arch} (both builds, same code)",
                "pair": list(pair),
                # the two builds must be the same bytes: MNN_SME2 on x86 changes nothing, so a
                # difference means the builds differ in something else the pair would measure
                "passed": count["treatment"] == 0 and count["baseline"] == 0 and not differ,
                "evidence": f"MNN_SME2 builds SME2 kernels for arm64 only; {treat.name}: "
                f"{count['treatment']}, {base.name}: {count['baseline']} SME2 kernels; "
                f"their artifacts {same}; expectation: no difference",
                "details": {**count, "differing_files": differ},
            }
        )
        return checks, True
    else:
        checks.append(
            {
                "name": "SME2 kernels in the builds (static)",
                "pair": list(pair),
                "passed": count["treatment"] > 0 and count["baseline"] == 0,
                "evidence": f"treatment {treat.name}: {count['treatment']} MNN SME2 kernels "
                f"(SME2-named functions that execute SME instructions); baseline "
                f"{base.name}: {count['baseline']}",
                "details": count,
            }
        )
    return checks, False


def cpu_target_check(greedy: dict, pair: tuple[str, str], variants: dict) -> dict:
    """One MNN binary, SME2 masked at run time in the baseline by MNN_CPU_TARGET, which it
    must confirm (`sme2=0`)."""
    base_variant, treat_variant = pair
    line = greedy[base_variant]["engine"].get("cpu_target", "")
    return {
        "name": f"SME2 masked at run time in {base_variant} (same binary as {treat_variant})",
        "pair": list(pair),
        "passed": "sme2=0" in line,
        "evidence": f"{base_variant} printed {line or 'no MNN_CPU_TARGET line'!r} "
        "(needs an MNN_PIPELINE_PROFILE build and env MNN_CPU_TARGET < 3)",
        "details": {"line": line, "env": variants[base_variant].env},
    }


def device_vector_length_bits(facts: dict) -> int | None:
    """The device's streaming vector length: measured (QEMU's prctl probe) or the kernel's
    default for new processes (a phone's /proc/sys/abi/sme_default_vector_length)."""
    if facts.get("sme_vector_length_bits"):
        return int(facts["sme_vector_length_bits"])
    if facts.get("sme_default_vector_length_bytes"):
        return int(facts["sme_default_vector_length_bytes"]) * 8
    return None


def vector_length_check(
    pair: tuple[str, str], treat: dict, facts: dict, runtime_line: str = ""
) -> list[dict]:
    """An SME2 device whose streaming vector length the treatment's SME2 kernels were not
    written for: the gate's verdict there is explained before it is read. An engine that
    itself declines SME2 there (its feature line, runtime_line, says `sme2: 0`, as MNN with
    patches/mnn-sme2-vector-length.patch does) does not run them: that passes."""
    supported = treat.kind.sme2_vector_lengths_bits
    bits = device_vector_length_bits(facts)
    if not facts.get("sme2") or not supported or bits is None:
        return []
    declined = supported_features(runtime_line).get("sme2") is False
    evidence = (
        f"device {facts['device']}: {bits} bits; the engine's SME2 kernels are written for "
        f"{', '.join(map(str, supported))} bits (engines/: its kind)"
    )
    if declined and bits not in supported:
        evidence += f"; it declined SME2 here: {runtime_line!r}"
    return [
        {
            "name": f"streaming vector length supported by {treat.name}'s SME2 kernels",
            "pair": list(pair),
            "passed": bits in supported or declined,
            "evidence": evidence,
            "details": {"device_bits": bits, "supported_bits": list(supported)},
        }
    ]


def check(
    greedy: dict,
    facts: dict,
    model: str,
    design: Design,
    modes: PairModes,
    correctness: Correctness,
    engines: dict[str, dict],
    variants: dict,
    profiles: list[dict] | None = None,
    attribution: Attribution | None = None,
    engine_tests: dict[str, dict] | None = None,
) -> dict:
    """Every check of every compared pair (each check names its pair); with profiles (what
    ran, analysis/attribution.py) also the kernels each pair executed, as its mode on the
    device asks (modes: engines.pairs.modes_of the device's pair modes); with engine_tests
    (engine -> its own tests' record on this device) that the treatment passes them."""
    by_phase = {(p["variant"], p["phase"]): p for p in profiles or []}
    checks = []
    for pair in Pair.compared(design):
        names = pair.names
        line = greedy[pair.treatment]["engine"].get("device_supports", "")
        checks += [
            correctness_check(greedy, names, correctness),
            runtime_features_check(greedy, names),
            *kernel_checks(greedy, names, engines, variants, facts),
            *vector_length_check(names, engines[pair.treatment_engine], facts, line),
        ]
        if profiles is not None:
            checks += execution_checks(by_phase, pair, engines, modes[names], attribution)
        checks += engine_tests_check(pair, engine_tests or {})
    return {"device": facts["device"], "model": model, "checks": checks}
