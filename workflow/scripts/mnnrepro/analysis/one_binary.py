"""The checks of a pair that runs one binary twice, SME kernels off in the baseline only: by
the engine kind's own switch (llama.cpp's `GGML_KLEIDIAI_SME=0`, ONNX Runtime's session option
`mlas.disable_kleidiai`), or by the SME mask every kind shares (a variant's `hide_sme`:
toolchain/sme_mask, preloaded, hides SME from getauxval). Whether the kernels then ran is the
profile's check (analysis/attribution.py), the same for both."""

from __future__ import annotations

from mnnrepro.engines.device_io import supported_features


def switch_checks(
    greedy: dict, pair: tuple[str, str], base: dict, treat: dict, variants: dict, facts: dict
) -> list[dict]:
    """An engine whose SME kernels are switched off at run time (llama.cpp's KleidiAI kernels,
    `GGML_KLEIDIAI_SME=0`; ONNX Runtime's, session option `mlas.disable_kleidiai` "1"): one
    binary, the switch set in the baseline only, the kernels in the build where SME2 can
    exist, and on an SME2 device the engine saying which it chose, where it says so."""
    kind = treat.kind
    base_variant, treat_variant = pair
    env = {v: kind.switch_value(variants[v]) for v in pair}
    checks = [
        {
            "name": f"SME kernels switched off in {base_variant} only "
            f"(same binary as {treat_variant})",
            "pair": list(pair),
            "passed": base.name == treat.name
            and env[base_variant] == kind.switch_off
            and env[treat_variant] in (None, ""),
            "evidence": f"engines {base.name} / {treat.name}; {kind.sme_switch}: "
            f"{base_variant}={env[base_variant]!r}, {treat_variant}={env[treat_variant]!r} "
            f"(it turns off {kind.switch_turns_off})",
            "details": {"env": env},
        },
        kernels_check(
            f"KleidiAI SME kernels in the build ({treat.target_arch})",
            pair,
            treat,
            "KleidiAI ",
            "kleidiai_sme_function_count",
        ),
    ]
    if facts.get("sme2") and kind.reports_sme_choice:
        checks.append(sme_choice_check(greedy, pair))
    return checks


def sme_choice_check(greedy: dict, pair: tuple[str, str]) -> dict:
    """On an SME2 device, an engine that says which kernels it chose (`kleidiai_sme`): SME in
    the treatment, not in the baseline."""
    base_variant, treat_variant = pair
    chosen = {v: greedy[v]["engine"].get("kleidiai_sme", False) for v in pair}
    return {
        "name": f"KleidiAI chose SME kernels in {treat_variant}, not in {base_variant}",
        "pair": list(pair),
        "passed": chosen[treat_variant] and not chosen[base_variant],
        "evidence": "; ".join(
            f"{v}: {greedy[v]['engine'].get('device_supports') or 'no feature line'!r}"
            for v in pair
        ),
        "details": chosen,
    }


def kernels_check(name: str, pair: tuple[str, str], treat, whose: str, detail: str) -> dict:
    """The SME kernels of the treatment's build that the switch or the mask turns off: some
    where SME2 can exist, none off arm64 (both variants then run the same code: equality)."""
    kind = treat.kind
    count = kind.sme_kernel_count(treat)
    impossible = kind.sme2_impossible(treat)
    expected = "none (no SME2 on this architecture)" if impossible else "some"
    return {
        "name": name,
        "pair": list(pair),
        "passed": count == 0 if impossible else count > 0,
        "evidence": f"{treat.name}: {count} {whose}{kind.sme_kernels_are}; expectation: {expected}",
        "details": {detail: count},
    }


def mask_checks(
    greedy: dict, pair: tuple[str, str], base: dict, treat: dict, variants: dict, facts: dict
) -> list[dict]:
    """The SME mask in the baseline only (one binary), the SME kernels it hides in the build
    where the kind counts them, and on an SME2 device the engine's own view: which kernels it
    chose where it says so, else the SME2 its feature line saw."""
    kind = treat.kind
    base_variant, treat_variant = pair
    hidden = {v: variants[v].hide_sme for v in pair}
    checks = [
        {
            "name": f"SME hidden from {base_variant} only (same binary as {treat_variant})",
            "pair": list(pair),
            "passed": base.name == treat.name
            and hidden[base_variant]
            and not hidden[treat_variant],
            "evidence": f"engines {base.name} / {treat.name}; hide_sme: "
            f"{base_variant}={hidden[base_variant]}, {treat_variant}={hidden[treat_variant]} "
            "(the SME mask preloaded: getauxval without SME)",
            "details": {"hide_sme": hidden},
        }
    ]
    if kind.sme_switch or kind.carries_sme2_kernels(treat):
        name = f"SME kernels for the mask to hide ({treat.target_arch} build)"
        checks.append(kernels_check(name, pair, treat, "", "sme_kernel_count"))
    if facts.get("sme2"):
        checks.append(
            sme_choice_check(greedy, pair) if kind.reports_sme_choice else seen_check(greedy, pair)
        )
    return checks


def seen_check(greedy: dict, pair: tuple[str, str]) -> dict:
    """On an SME2 device, the SME2 the engine's feature line saw: none under the mask, some
    without it (MNN prints `sme2: 0` or `sme2: 1`)."""
    lines = {v: greedy[v]["engine"].get("device_supports", "") for v in pair}
    seen = {v: supported_features(line).get("sme2") for v, line in lines.items()}
    base_variant, treat_variant = pair
    return {
        "name": f"the engine saw no SME2 in {base_variant}, SME2 in {treat_variant}",
        "pair": list(pair),
        "passed": seen[base_variant] is False and seen[treat_variant] is True,
        "evidence": "; ".join(f"{v}: {line or 'no feature line'!r}" for v, line in lines.items()),
        "details": {"sme2_seen": seen},
    }
