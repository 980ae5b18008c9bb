"""A prediction scored against foreign results: two registered foreign files (llm_bench -j or
llama-bench -o json, docs/store.md), the baseline build's and the treatment build's, taken as
their tool reported them. Their gain per phase is the ratio of the two tools' mean tok/s, at
the rows both files measured alike (phase, prompt and generated tokens, depth, threads; and
the model where a file holds several); its
interval is Welch's on the two files' log samples where the tool kept at least two of each
(llama-bench's samples_ts), and none where it did not (llm_bench keeps a mean and an SD only):
no interval is made up. Each row is scored by every predicted pair (analysis/prediction_score),
with what differs from the prediction (threads, token counts) named; a row of another thread
count or prompt than the prediction's is not scored, and says why."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from mnnrepro.analysis.prediction_score import (
    MUST_MATCH,
    registered_prediction,
    score_fields,
    yes_no,
)
from mnnrepro.phases import PHASES
from mnnrepro.store.compare import pct, resolve_run, welch_ratio
from mnnrepro.store.schema import open_store

MATCHED = ["phase", "prompt_tokens", "generate_tokens", "depth", "threads"]
CI_LEVEL = 0.95


def foreign_rows(db, given: str) -> pd.DataFrame:
    """A registered foreign file's rows (refused with one line where the run is not one)."""
    run_id = resolve_run(db, given)
    (origin,) = db.execute("SELECT origin FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if not origin.startswith("foreign:"):
        raise ValueError(f"run {run_id[:12]} is {origin}: score takes foreign files")
    return pd.read_sql_query(
        "SELECT * FROM foreign_results WHERE run_id = ?", db, params=(run_id,)
    ).fillna({"depth": 0})


def measured_gain(base: tuple, treat: tuple) -> dict:
    """The treatment's mean tok/s over the baseline's, minus 1, and Welch's interval on the
    log samples where both files kept at least two (else none); base, treat: (mean tok/s,
    samples as the store holds them: a JSON list, or null)."""
    logs = [np.log(json.loads(samples or "null") or [np.nan]) for _, samples in (base, treat)]
    gain = {"gain": treat[0] / base[0] - 1, "gain_ci_low": None, "gain_ci_high": None}
    if all(len(s) >= 2 and np.isfinite(s).all() for s in logs):
        _, low, high = welch_ratio(*logs, CI_LEVEL)
        gain.update(gain_ci_low=low - 1, gain_ci_high=high - 1)
    return gain


def foreign_scores(store: str, prediction: str, baseline: str, treatment: str) -> pd.DataFrame:
    """One row per predicted pair and measured row both files share in prefill or decode."""
    document = registered_prediction(prediction)
    db = open_store(store)
    try:
        base, treat = foreign_rows(db, baseline), foreign_rows(db, treatment)
    finally:
        db.close()
    both = matched_rows(base, treat)
    target = f"{document['core']}, {document['soc']}, {document['model']}"
    rows = []
    for r in both[both["phase"].isin(PHASES)].itertuples():
        got = measured_gain((r.tps_mean_b, r.samples_b), (r.tps_mean_t, r.samples_t))
        for p in document["predictions"]:
            named = differences(document, p, r)
            refused = "; ".join(text for key, text in named if key in MUST_MATCH)
            predicted = {**p["phases"][r.phase], "not_scored": refused}
            rows.append(
                {
                    "pair": p["pair"],
                    "predicted_for": target,
                    "measured_models": f"{r.model_b} vs {r.model_t}",
                    **{k: getattr(r, k) for k in MATCHED},
                    **got,
                    **score_fields(predicted, got),
                    "differences": "; ".join(text for _, text in named),
                }
            )
    if not rows:
        raise ValueError(f"{baseline} and {treatment} share no prefill or decode row ({MATCHED})")
    return pd.DataFrame(rows)


def matched_rows(base: pd.DataFrame, treat: pd.DataFrame) -> pd.DataFrame:
    """The rows both files measured alike (MATCHED). A file of one model pairs with the
    other's whatever each names it (one build's path, the other's); where either holds several
    models, a row pairs only with the same model's."""
    several = max(base["model"].nunique(), treat["model"].nunique()) > 1
    key = [*MATCHED, "model_key"]
    base, treat = (f.assign(model_key=f["model"] if several else "") for f in (base, treat))
    return base.merge(treat, on=key, suffixes=("_b", "_t"))


def differences(document: dict, prediction: dict, row) -> list[tuple[str, str]]:
    """What the measured row and the prediction differ in, (what, one sentence) each: threads,
    and the token counts."""
    bench = document.get("bench", {})
    predicted_threads = prediction.get("threads", [None, None])[1]
    pairs = [
        ("threads", predicted_threads, row.threads),
        ("prompt_tokens", bench.get("prompt_tokens"), row.prompt_tokens),
        ("generate_tokens", bench.get("generate_tokens"), row.generate_tokens),
    ]
    return [
        (name, f"{name} {then} predicted, {now} measured")
        for name, then, now in pairs
        if then is not None and now is not None and now > 0 and then != now
    ]


def markdown(scores: pd.DataFrame) -> str:
    (target,), models = scores["predicted_for"].unique(), scores["measured_models"].unique()
    lines = [
        f"Predicted for {target}; measured: {', '.join(models)} (the files' models, baseline "
        "vs treatment).",
        "",
        "| pair | phase | prompt | generated | depth | threads | measured [interval] | "
        "predicted [interval] | measured holds predicted | predicted holds measured | "
        "log error | not like for like |",
        "|---|---|---:|---:|---:|---:|---|---|---|---|---:|---|",
    ]
    for r in scores.itertuples():
        answers = [yes_no(r.measured_holds_prediction), yes_no(r.prediction_holds_measured)]
        answers += ["-" if pd.isna(r.log_error) else f"{r.log_error:+.2f}"]
        if r.not_scored:  # another quantity than the prediction's: no score
            answers = ["not scored", "-", "-"]
        lines.append(
            f"| {r.pair} | {r.phase} | {r.prompt_tokens} | {r.generate_tokens} | {r.depth} | "
            f"{r.threads} | {pct(r.gain)} [{pct(r.gain_ci_low)}, {pct(r.gain_ci_high)}] | "
            f"{pct(r.predicted_gain)} [{pct(r.predicted_gain_low)}, "
            f"{pct(r.predicted_gain_high)}] | {' | '.join(answers)} | {r.differences or '-'} |"
        )
    return "\n".join(lines)
