"""How a pair is judged on a device, decided once from its treatment engine's record and the
device's facts: against its claim, as a fallback check (an SME2 treatment on a device without
SME2) or as an equality check (SME2 cannot exist for the builds' CPU). The benchmark's
stopping rule (runs/precision) and the verdicts (analysis) both ask it."""

from __future__ import annotations

from mnnrepro.engines.registry import kind_of_record


def needs_sme2(engine_record: dict) -> bool:
    return kind_of_record(engine_record).needs_sme2(engine_record)


def runs_sme2(treatment: dict, facts: dict) -> bool:
    """Whether the treatment's SME2 kernels should run on this device: it needs SME2 and the
    device has it (what the profile's check of what ran expects)."""
    return bool(facts.get("sme2")) and needs_sme2(treatment)


def pair_mode(treatment: dict, facts: dict, policy: str) -> str:
    """'claim', 'fallback' or 'equal' for this device; raises early where the comparison
    cannot hold."""
    if kind_of_record(treatment).sme2_impossible(treatment):
        return "equal"
    if not needs_sme2(treatment) or facts.get("sme2"):
        return "claim"
    if policy == "fallback-check":
        return "fallback"
    features = " ".join(facts.get("cpu_features", []))[:200]
    raise ValueError(
        f"device {facts['device']} has no sme2 (CPU features: {features} ...) but treatment "
        f"engine {treatment['engine']} is built with SME2 kernels; set "
        "config key `comparison.on_non_sme2_device: fallback-check` to run it as a fallback "
        "check (expectation: no regression)"
    )
