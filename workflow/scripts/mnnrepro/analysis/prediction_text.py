"""What the report says of a prediction: its rows per pair and phase, where its inputs came from,
what is not like for like, and the registration it is scored against."""

from __future__ import annotations

from mnnrepro.analysis.token_work import short_prompt
from mnnrepro.phases import PHASES


def pair_phases(document: dict):
    """(the pair as `treatment vs baseline`, phase, its prediction, the pair's entry) for every
    predicted pair and phase."""
    for p in document["predictions"]:
        for phase in PHASES:
            yield f"{p['treatment']} vs {p['baseline']}", phase, p["phases"][phase], p


def interval_name(document: dict) -> str:
    """What a prediction's interval is: its level (analysis/cost_model.py), or, made before
    intervals had one, the extremes of every corner of the constants' ranges."""
    spec = document.get("interval")
    if not spec:
        return "interval (every corner of the ranges)"
    return f"{spec['level']:.0%} interval"


def interval_text(document: dict) -> str:
    """How the intervals were made, in one sentence ('' for a prediction made before)."""
    spec = document.get("interval")
    if not spec:
        return ""
    return (
        f"Each interval holds the central {spec['level']:.0%} of the predicted speedups over "
        f"{spec['samples']} draws of the ranged constants ({spec['constants']}), each with a "
        f"model error of log sd {spec['model_error_log_sd']:g} "
        f"({spec['model_error_source']}), widened where needed to hold the gain at the "
        "constants' values."
    )


def gain_text(got: dict) -> str:
    return f"{got['gain']:+.0%} | [{got['low']:+.0%}, {got['high']:+.0%}]"


def moving(got: dict) -> list[dict]:
    """A phase's sensitivities that move its gain, largest swing first (a constant the phase
    does not use, as bandwidth in prefill, swings by nothing)."""
    return [s for s in got["sensitivity"] if s["at_low"] != s["at_high"]]


def predicted_rows(document: dict) -> list[str]:
    """One table row per pair and phase: predicted gain, interval, the constant it is most
    sensitive to, which build is bound by memory."""
    out = []
    for pair, phase, got, p in pair_phases(document):
        top = next(iter(moving(got)), None)
        swing = (
            f"`{top['constant']}` ({top['at_low']:+.0%} .. {top['at_high']:+.0%})" if top else "-"
        )
        bound = ", ".join(k for k, v in got["memory_bound"].items() if v) or "neither"
        rates = got.get("tokens_per_s")  # absent from a prediction made before it was kept
        speed = f"{rates['baseline']:.3g} -> {rates['treatment']:.3g}" if rates else "-"
        out.append(
            f"| {pair} | {p['model']} | {phase} | {gain_text(got)} | {speed} | {swing} | {bound} |"
        )
    return out


def pricing_text(document: dict) -> str:
    """How the counted instructions were priced (a document made before `pricing`: by class)."""
    if document.get("pricing") == "per_instruction":
        return (
            f"each executed instruction priced by {document['priced_by']} (the busiest unit, or "
            "the dispatch width, bounds the cycles) with config/cost_model.yaml's other constants"
        )
    return "priced by class with config/cost_model.yaml"


def prediction_markdown(document: dict) -> str:
    """prediction.md: the predictions, each phase's sensitivities, and every constant with its
    source."""
    out = [
        f"# Predicted gains on {document['core']} ({document['soc']}, {document['model']})",
        "",
        f"From the instructions each build executed on `{document['device']}` "
        f"({document.get('counted_by', 'QEMU')}), per token, {pricing_text(document)}; "
        "predicted before any run it is scored against"
        f"{prompt_text(document)}.",
        *registered_lines(document),
        *(["", interval_text(document)] if interval_text(document) else []),
        "",
        f"| pair | counted model | phase | predicted gain | {interval_name(document)} | "
        "predicted tok/s "
        "(baseline -> treatment) | most sensitive to | memory-bound |",
        "|---|---|---|---:|---|---|---|---|",
        *predicted_rows(document),
        "",
        "## Sensitivity (the gain at each constant's low and high, the others at their value)",
        "",
        "| pair | phase | constant | at low | at high |",
        "|---|---|---|---:|---:|",
    ]
    out += [
        f"| {pair} | {phase} | `{s['constant']}` | {s['at_low']:+.1%} | {s['at_high']:+.1%} |"
        for pair, phase, got, _ in pair_phases(document)
        for s in got["sensitivity"]
    ]
    out += ["", "## Constants", "", "| constant | value | range | source |", "|---|---:|---|---|"]
    out += [
        f"| `{c['name']}` | {c['value']:g} | {c['low']:g} .. {c['high']:g} | {c['source']} |"
        for c in document["constants"]
    ]
    out += ["", "Inputs: " + ", ".join(f"`{k}` {v[:12]}" for k, v in document["inputs"].items())]
    return "\n".join(out) + "\n"


def prompt_text(document: dict) -> str:
    """For which prompt, where it is not the profiled one (a short prefill told apart what a
    prefill does once)."""
    profiled = document.get("profiled_bench", document.get("bench", {})).get("prompt_tokens")
    target = document.get("bench", {}).get("prompt_tokens")
    if target == profiled:
        return ""
    return (
        f", for a {target}-token prompt (profiled at {profiled} and {short_prompt(profiled)}: "
        f"what a prefill does once is spread over {target})"
    )


def origin_text(document: dict) -> str:
    """Where the prediction came from: registered (its file, hash, when it was measured) or
    made in this run from an emulated device."""
    registered = document.get("registered")
    if not registered:
        return f"made in this run from the instructions each build executed on {document['device']}"
    when = (registered.get("measured") or {}).get("text", "").rstrip(".")
    return (
        f"registered from {registered['file']} (sha256 {registered['sha256'][:12]}), made "
        f"before this run{': ' + when if when else ''}"
    )


def not_like_for_like(document: dict) -> str:
    """What the predicted pairs' variants, benchmark and model differ in from this run's, in one
    sentence ('' where nothing: analysis/prediction_score.py binds a prediction to its run)."""
    differences = [*document.get("differences", []), *document.get("other_models", {}).values()]
    return "Not like for like: " + "; ".join(differences) + "." if differences else ""


def registered_lines(document: dict) -> list[str]:
    """Where a registered prediction came from, and what its pairs differ in from this run's."""
    origin = origin_text(document)
    out = ["", origin[0].upper() + origin[1:] + "."] if document.get("registered") else []
    unlike = not_like_for_like(document)
    return out + (["", unlike] if unlike else [])
