"""A prediction scored against what was measured: the phone's gains predicted before the phone
(analysis/prediction.py's prediction.json, made in this run from an emulated device, or made
earlier and registered with `prediction.registered`, e.g. benchmarks/results/predicted_gain.json)
beside the gains this run judged on a device.

A predicted pair is found by its config key (`comparison`, `comparison.also.<i>`), so a
prediction made with one config scores another's pair; what differs between the predicted
variants and the measured ones (runtime settings, engines) is named, never hidden. A summary
row is scored where its pair is judged against its claim (an SME2 device): its predicted gain
and interval, whether the measured interval holds the predicted gain (the measurement cannot
reject the prediction) and whether the predicted interval holds the measured gain (the
prediction's ranges covered what happened)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pandas as pd

from mnnrepro.analysis.prediction_text import (
    gain_text,
    interval_name,
    not_like_for_like,
    origin_text,
)
from mnnrepro.design import variants_of
from mnnrepro.errors import DataError
from mnnrepro.models.shapes import identity_text
from mnnrepro.phases import PHASES

SCORE_COLUMNS = [
    "predicted_gain",
    "predicted_gain_low",
    "predicted_gain_high",
    "measured_holds_prediction",
    "prediction_holds_measured",
    "log_error",  # ln((1 + measured gain) / (1 + predicted gain)): the speedups' log ratio
    "not_scored",  # why a prediction is not scored against the row ("" or null: it is)
]
# what a prediction must share with a measurement to be scored against it: a gain predicted
# for another thread count, prompt or model (models/shapes.IDENTITY) is another quantity (the
# differences in anything else, e.g. the decoded tokens, are named beside the score)
MUST_MATCH = ("threads", "prompt_tokens")
ESTIMATE = ("gain", "low", "high")


def registered_prediction(path: str | Path, name: str = "") -> dict:
    """A prediction made earlier, read and checked (a prediction.json, or a benchmark's result
    that holds one under `prediction`), with where it came from: its file, sha256 and, for a
    benchmark's result, when and at which commit it was measured. A file that is not one is
    one DataError line (name: the file as configured, else path)."""
    try:
        data = Path(path).read_bytes()
        document = json.loads(data)
    except (OSError, ValueError) as error:
        raise DataError(path, f"not a readable prediction ({error})") from None
    outer = document if isinstance(document, dict) else {}
    document = outer.get("prediction", outer)
    problem = prediction_problem(document)
    if problem:
        raise DataError(
            path, f"not a prediction (analysis/prediction.py's prediction.json): {problem}"
        )
    source = {"file": name or str(path), "sha256": hashlib.sha256(data).hexdigest()}
    return {**document, "registered": {**source, "measured": outer.get("measured")}}


def prediction_problem(document: dict) -> str | None:
    """What a prediction document lacks (None: nothing)."""
    missing = [k for k in ("core", "soc", "model", "predictions") if k not in document]
    if missing:
        return f"no {missing}"
    for i, p in enumerate(document["predictions"]):
        phases = p.get("phases", {}) if isinstance(p, dict) else {}
        estimates = [phases.get(phase, {}).get(k) for phase in PHASES for k in ESTIMATE]
        named = isinstance(p, dict) and all(k in p for k in ("pair", "baseline", "treatment"))
        if not named or not all(isinstance(e, int | float) for e in estimates):
            return f"predictions[{i}] lacks its pair, or a phase's gain, low or high"
    return None


def variant_settings(specs: dict) -> dict[str, dict]:
    """What a prediction records of each variant, and a run's are compared with: its engine,
    its runtime settings (the schema's defaults for the rest) and its environment (specs:
    Plan.variant_specs)."""
    return {
        name: {"engine": v.engine, "runtime": dict(v.runtime), "env": v.env}
        for name, v in variants_of(specs).items()
    }


def bound_to_run(
    document: dict, design, variants: dict[str, dict], measured: dict[str, dict | None]
) -> dict:
    """The prediction as this run scores it: each predicted pair marked with the names this
    run's pair of the same key has (`measured_as`, None where this run has no such pair), and
    what differs between the prediction's benchmark and variants and this run's
    (`differences`; variants: each one's engine, runtime settings and environment); and the
    run's models it is not scored on, each with why (`other_models`; measured: each model's
    identity, models/shapes.measured_identities)."""
    pairs = {p.key: p for p in design.comparison.pairs}
    recorded = document.get("variants")
    predictions = []
    differences = [
        f"bench `{k}` {v!r} predicted, {getattr(design.bench, k, None)!r} measured"
        for k, v in document.get("bench", {}).items()
        if getattr(design.bench, k, None) != v
    ]
    for p in document["predictions"]:
        pair = pairs.get(p["pair"])
        names = [pair.baseline, pair.treatment] if pair else None
        refused = refusals(document, p, names, variants, design.bench.prompt_tokens)
        predictions.append({**p, "measured_as": names, "not_scored": "; ".join(refused)})
        if pair is None:
            continue
        if recorded is None:
            differences.append(f"`{p['pair']}`: the prediction does not record its variants")
            continue
        for side, name in zip(("baseline", "treatment"), names, strict=True):
            then, now = recorded.get(p[side], {}), variants.get(name, {})
            differences += variant_differences(f"`{p['pair']}` {side}", then, now)
    unique = list(dict.fromkeys(differences))  # a pair predicted on several emulated models
    others = model_refusals(document, measured)
    return {**document, "predictions": predictions, "differences": unique, "other_models": others}


def model_refusals(document: dict, measured: dict[str, dict | None]) -> dict[str, str]:
    """Each measured model that is not the one predicted for (models/shapes.IDENTITY: the
    document's `model_identity`; unrecorded on either side is no match), with one sentence."""
    predicted = document.get("model_identity")
    said = f"model {document['model']} ({identity_text(predicted)}) predicted"
    return {
        model: f"{said}, {model} ({identity_text(found)}) measured"
        for model, found in sorted(measured.items())
        if predicted is None or found != predicted
    }


def refusals(
    document: dict, prediction: dict, names: list | None, variants: dict, prompt_tokens: int
) -> list[str]:
    """Why a predicted pair is not scored against this run's pair of the same key (MUST_MATCH:
    each variant's thread count, the prompt); [] where it is, or where the run has no such
    pair."""
    if names is None:
        return []
    measured = [variants.get(n, {}).get("runtime", {}).get("thread_num") for n in names]
    then = document.get("bench", {}).get("prompt_tokens", prompt_tokens)
    compared = {  # MUST_MATCH's quantities: (predicted, measured)
        "threads": (list(prediction.get("threads") or measured), measured),
        "prompt_tokens": (then, prompt_tokens),
    }
    return [
        f"{key} {compared[key][0]} predicted, {compared[key][1]} measured"
        for key in MUST_MATCH
        if compared[key][0] != compared[key][1]
    ]


def variant_differences(where: str, then: dict, now: dict) -> list[str]:
    """One sentence per runtime setting, environment variable and engine a predicted variant
    and a measured one differ in."""
    out = []
    for part in ("runtime", "env"):
        before, after = then.get(part, {}), now.get(part, {})
        out += [
            f"{where}: {part} `{k}` {before.get(k)!r} predicted, {after.get(k)!r} measured"
            for k in sorted({*before, *after})
            if before.get(k) != after.get(k)
        ]
    if then.get("engine") != now.get("engine"):
        out.append(
            f"{where}: engine {then.get('engine')!r} predicted, {now.get('engine')!r} measured"
        )
    return out


def predicted_for(document: dict, names: tuple[str, str], phase: str, model: str):
    """The predicted {gain, low, high, ...} of this run's pair (names: its baseline and
    treatment) in one phase, for a measured model: the prediction made on that very model
    if there is one, else the pair's only prediction; None where the pair is not predicted or
    it is ambiguous (several emulated models, none of them this one). Its `not_scored` says
    why it is not scored on this model, if it is not (bound_to_run)."""
    found = [q for q in document["predictions"] if q.get("measured_as") == list(names)]
    same = [q for q in found if q["model"] == model]
    chosen = same or (found if len(found) == 1 else [])
    got = chosen[0]["phases"].get(phase) if chosen else None  # vision phases: none
    if not got:
        return None
    refused = [chosen[0].get("not_scored", ""), document.get("other_models", {}).get(model, "")]
    return {**got, "not_scored": "; ".join(r for r in refused if r)}


def score_fields(got: dict | None, row: dict) -> dict:
    """A measured row's prediction columns: the predicted gain and interval, the two
    containments and the log error (None throughout where nothing is predicted; the first
    None where the measurement has no interval; the score None, and why in `not_scored`,
    where the prediction is for another quantity: MUST_MATCH)."""
    if got is None:
        return dict.fromkeys(SCORE_COLUMNS)
    gain, low, high = (float(got[k]) for k in ESTIMATE)
    predicted = {"predicted_gain": gain, "predicted_gain_low": low, "predicted_gain_high": high}
    if got.get("not_scored"):
        return {**dict.fromkeys(SCORE_COLUMNS), **predicted, "not_scored": got["not_scored"]}
    interval = [row.get("gain_ci_low"), row.get("gain_ci_high")]
    has_interval = not any(v is None or pd.isna(v) for v in interval)
    return {
        **predicted,
        "measured_holds_prediction": bool(interval[0] <= gain <= interval[1])
        if has_interval
        else None,
        "prediction_holds_measured": bool(low <= row["gain"] <= high),
        "log_error": round(math.log((1 + row["gain"]) / (1 + gain)), 4),
        "not_scored": "",
    }


def yes_no(value) -> str:
    return "-" if value is None or pd.isna(value) else ("yes" if bool(value) else "no")


def prediction_section(document: dict, summary: pd.DataFrame) -> list[str]:
    """summary.md's side by side: each predicted pair's gain beside the claim and, on every
    device this run judged it, the measured gain with its interval and the score."""
    claims = document.get("claims", {})
    out = [
        "",
        "## Predicted before the phone",
        "",
        f"The cost model's gains on {document['core']} ({document['soc']}, {document['model']}), "
        f"{origin_text(document)}; beside them, the claim and the gains this run judged, each "
        "scored: does the measured interval hold the predicted gain, does the predicted "
        "interval hold the measured gain. An emulated device's timings are never judged: no "
        "score there. Constants, sources and sensitivities: `prediction.md`.",
        "",
    ]
    unlike = not_like_for_like(document)
    out += [unlike, ""] if unlike else []
    out += [
        f"| pair | phase | predicted | predicted {interval_name(document)} | claim | device | "
        "measured [interval] | "
        "measured holds predicted | predicted holds measured | log error |",
        "|---|---|---:|---|---:|---|---|---|---|---:|",
    ]
    for p in document["predictions"]:
        for phase in PHASES:
            claim = f"{claims[phase]:+.0%}" if phase in claims else "-"
            head = f"| {p['pair']} ({p['treatment']} vs {p['baseline']}) | {phase} | "
            head += f"{gain_text(p['phases'][phase])} | {claim} | "
            scored = scored_rows(summary, document, p, phase)
            out += [head + measured_cells(r) for r in scored] or [
                head + "- | none judged | - | - | - |"
            ]
    return out


def scored_rows(summary: pd.DataFrame, document: dict, prediction: dict, phase: str) -> list:
    """The summary rows one prediction scored in a phase: its pair's measured rows that were
    scored (judged against their claim) and that predicted_for gave this prediction."""
    names = prediction.get("measured_as")
    if not names or "predicted_gain" not in summary:
        return []
    rows = summary[
        (summary["baseline"] == names[0])
        & (summary["treatment"] == names[1])
        & (summary["phase"] == phase)
        & summary["predicted_gain"].notna()
    ]
    mine = prediction["phases"][phase]

    def given(model: str) -> dict | None:  # what predicted_for gave the row, its reason aside
        got = predicted_for(document, tuple(names), phase, model)
        return {k: v for k, v in got.items() if k != "not_scored"} if got else None

    return [r for r in rows.itertuples() if given(r.model) == mine]


def measured_cells(r) -> str:
    refused = r.not_scored if isinstance(r.not_scored, str) else ""  # a CSV's empty: NaN
    scored = (
        f"not scored: {refused} | - | - |"
        if refused
        else f"{yes_no(r.measured_holds_prediction)} | {yes_no(r.prediction_holds_measured)} | "
        f"{r.log_error:+.2f} |"
    )
    return f"{r.device} | {r.gain:+.0%} [{r.gain_ci_low:+.0%}, {r.gain_ci_high:+.0%}] | {scored}"
