"""A prediction made before a run, registered and scored against the run's judged gains
(analysis/prediction_score.py, `prediction.registered`): the committed prediction
(benchmarks/results/predicted_gain.json, the X300's) is read with where it came from, bound to
another config's pairs with every difference named, refused with one line where it is not a
prediction or predicts none of the config's pairs, and a store of the schema before scores
is brought up to it. The scoring of measured rows runs in tests/workflow/test_workflow_adb.py."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import design_of, full_variant_spec

from mnnrepro.analysis.cost_model import recorded_identity
from mnnrepro.analysis.prediction_score import (
    SCORE_COLUMNS,
    bound_to_run,
    predicted_for,
    registered_prediction,
    score_fields,
    variant_settings,
)
from mnnrepro.errors import DataError
from mnnrepro.models.shapes import measured_identities
from mnnrepro.plan.prediction import prediction_problems
from mnnrepro.store.foreign import register_foreign
from mnnrepro.store.schema import open_store

ROOT = Path(__file__).resolve().parents[2]
PREDICTED = ROOT / "benchmarks" / "results" / "predicted_gain.json"
NAME = "benchmarks/results/predicted_gain.json"


def paper_config(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


def test_the_committed_prediction_is_read_with_its_origin():
    document = registered_prediction(PREDICTED, NAME)
    wrapper = json.loads(PREDICTED.read_text())
    assert document["predictions"] == wrapper["prediction"]["predictions"]
    registered = document["registered"]
    assert registered["file"] == NAME
    assert registered["sha256"] == hashlib.sha256(PREDICTED.read_bytes()).hexdigest()
    assert registered["measured"]["commit"] == wrapper["measured"]["commit"]
    assert document["variants"] and document["bench"]  # what the scoring compares with


def completed(variants: dict) -> dict:
    """A config's variants as the plan hands them (every runtime key, env)."""
    return {name: full_variant_spec(spec) for name, spec in variants.items()}


def test_the_same_variants_differ_in_nothing_and_others_are_named():
    document = registered_prediction(PREDICTED, NAME)
    config = paper_config("predict-x300.yaml")
    made = bound_to_run(document, design_of(config), document["variants"], {})
    # its own run: the same variants; it was predicted for the paper's prompt, not the profiled
    assert made["differences"] == ["bench `prompt_tokens` 512 predicted, 64 measured"]
    assert [p["measured_as"] for p in made["predictions"]] == [["sme2-off", "sme2-on"]]
    # the paper's phone config at 4 threads, 512/128 tokens, scored by the 1-thread prediction
    paper = paper_config("paper.yaml")
    bound = bound_to_run(
        document, design_of(paper), variant_settings(completed(paper["variants"])), {}
    )
    text = "\n".join(bound["differences"])
    assert "bench `generate_tokens` 8 predicted, 128 measured" in text
    assert "prompt_tokens" not in text  # predicted for its 512-token prompt
    assert "`comparison` treatment: runtime `thread_num` 1 predicted, 4 measured" in text
    # a 1-thread prediction is no prediction of a 4-thread gain: shown, never scored; its own
    # run's prompt was the profiled one (64), not the predicted one (512): not scored either
    (prediction,) = bound["predictions"]
    assert prediction["not_scored"] == "threads [1, 1] predicted, [4, 4] measured"
    assert made["predictions"][0]["not_scored"] == "prompt_tokens 512 predicted, 64 measured"
    one_thread = copy.deepcopy(paper)
    for name, variant in paper_config("paper-predicted.yaml")["variants"].items():
        one_thread["variants"][name]["runtime"].update(variant["runtime"])  # as Snakemake merges
    scored = bound_to_run(
        document, design_of(one_thread), variant_settings(completed(one_thread["variants"])), {}
    )
    assert scored["predictions"][0]["not_scored"] == ""  # its config: the same threads and prompt


def test_a_pair_is_found_by_its_key_and_an_ambiguous_one_is_not_scored():
    document = registered_prediction(PREDICTED, NAME)
    tiny = yaml.safe_load((ROOT / "tests/workflow/config-tiny.yaml").read_text())
    bound = bound_to_run(
        document, design_of(tiny), variant_settings(completed(tiny["variants"])), {}
    )
    (prediction,) = bound["predictions"]
    names = ("one-thread", "two-threads")
    got = predicted_for(bound, names, "prefill", "synth-tiny")
    assert got == {**prediction["phases"]["prefill"], "not_scored": prediction["not_scored"]}
    assert predicted_for(bound, ("two-threads", "one-thread"), "prefill", "synth-tiny") is None
    twice = copy.deepcopy(bound)
    other = {**copy.deepcopy(prediction), "model": "another-emulated-model"}
    twice["predictions"].append(other)
    assert predicted_for(twice, names, "prefill", "synth-tiny") is None  # which of the two?
    assert predicted_for(twice, names, "prefill", "another-emulated-model") == {
        **other["phases"]["prefill"],
        "not_scored": other["not_scored"],
    }


def test_a_prediction_is_scored_only_on_the_model_it_predicts():
    """The frozen prediction (for Qwen3-VL-4B's language model) scores a measured model of its
    shape whatever it is named, and refuses, naming both, a model of another shape, one whose
    shape the run did not record, and any model where the prediction's own is unknown; the
    measured identity comes from what the engine loaded (its MNN layout) before what the
    model was made as (its synthetic shape)."""
    document = registered_prediction(PREDICTED, NAME)
    document["model_identity"] = recorded_identity(ROOT / "config/cost_model.yaml", "qwen3-vl-4b")
    paper = paper_config("paper.yaml")
    for name, variant in paper_config("paper-predicted.yaml")["variants"].items():
        paper["variants"][name]["runtime"].update(variant["runtime"])
    variants = variant_settings(completed(paper["variants"]))
    manifests = [
        {"model": "qwen3-vl-4b-mnn", "spec": {"modelscope": "MNN/Qwen3-VL-4B-Instruct-MNN"}},
        {"model": "synth-06b", "spec": {"shape": "qwen3-0.6b"}},
        {"model": "gguf-only", "spec": {"checkpoint": "somewhere"}},
        {"model": "renamed", "spec": {"shape": "qwen3-0.6b"}},  # its layout says otherwise
    ]
    layouts = [
        {"model": "qwen3-vl-4b-mnn", "hidden_size": 2560, "num_hidden_layers": 36},
        {"model": "renamed", "hidden_size": 2560, "num_hidden_layers": 36},
    ]
    measured = measured_identities(manifests, layouts)
    bound = bound_to_run(document, design_of(paper), variants, measured)
    names = tuple(bound["predictions"][0]["measured_as"])
    said = "model qwen3-vl-4b (hidden size 2560, 36 layers) predicted"
    refused = {m: predicted_for(bound, names, "prefill", m)["not_scored"] for m in measured}
    assert refused == {
        "qwen3-vl-4b-mnn": "",
        "renamed": "",
        "synth-06b": f"{said}, synth-06b (hidden size 1024, 28 layers) measured",
        "gguf-only": f"{said}, gguf-only (of unrecorded shape) measured",
    }
    unknown = bound_to_run(
        {**document, "model_identity": None}, design_of(paper), variants, measured
    )
    assert all(predicted_for(unknown, names, "decode", m)["not_scored"] for m in measured)


def test_a_score_says_which_interval_holds_which_gain():
    document = registered_prediction(PREDICTED, NAME)
    got = document["predictions"][0]["phases"]["prefill"]  # +154 % [+74 %, +616 %]
    # the article's +81 % measured with a tight interval: it does not hold the prediction;
    # whether the prediction's interval holds it is the interval's answer
    article = {"gain": 0.81, "gain_ci_low": 0.78, "gain_ci_high": 0.84}
    assert score_fields(got, article) == {
        "predicted_gain": got["gain"],
        "predicted_gain_low": got["low"],
        "predicted_gain_high": got["high"],
        "measured_holds_prediction": False,
        "prediction_holds_measured": got["low"] <= 0.81 <= got["high"],
        "log_error": round(math.log(1.81 / (1 + got["gain"])), 4),
        "not_scored": "",
    }
    narrow = {"gain": got["high"] + 0.5, "gain_ci_low": got["high"] + 0.4, "gain_ci_high": 9.0}
    assert score_fields(got, narrow)["prediction_holds_measured"] is False
    wide = {"gain": 1.0, "gain_ci_low": 0.5, "gain_ci_high": 2.0}
    assert score_fields(got, wide)["measured_holds_prediction"] is True
    assert score_fields(got, wide)["prediction_holds_measured"] is True
    assert score_fields(None, wide) == dict.fromkeys(SCORE_COLUMNS)


def test_a_file_that_is_not_a_prediction_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match=r"bad.json: not a readable prediction"):
        registered_prediction(bad)
    document = json.loads(PREDICTED.read_text())
    del document["prediction"]["predictions"][0]["phases"]["decode"]["low"]
    bad.write_text(json.dumps(document))
    with pytest.raises(DataError, match=r"predictions\[0\] lacks its pair, or a phase's gain"):
        registered_prediction(bad)


def pinned(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_registered_prediction_must_predict_a_pair_of_the_config(tmp_path):
    registered = {"registered": NAME, "sha256": pinned(PREDICTED)}
    config = {**paper_config("paper.yaml"), "prediction": registered}
    assert prediction_problems(config) == []
    document = json.loads(PREDICTED.read_text())
    document["prediction"]["predictions"][0]["pair"] = "comparison.also.3"
    (tmp_path / "also.json").write_text(json.dumps(document))
    also = tmp_path / "also.json"  # absolute: as it is
    config["prediction"] = {"registered": str(also), "sha256": pinned(also)}
    (problem,) = prediction_problems(config)
    assert problem.endswith(
        "predicts the pairs ['comparison.also.3'], none of this config's ['comparison']"
    )
    config["prediction"] = {"registered": "benchmarks/results/none.json"}
    (problem,) = prediction_problems(config)
    assert problem.startswith("config key `prediction.registered`: ")
    assert "none.json: not a readable prediction" in problem
    config["prediction"] = {**registered, "core": "c1-ultra"}
    assert prediction_problems(config) == [
        "config key `prediction`: `registered` takes no ['core'] (it was made)"
    ]
    config["prediction"] = {"core": "c1-ultra"}
    (problem,) = prediction_problems(config)
    assert "give `registered`, or ['device', 'core', 'soc', 'model']" in problem


def test_a_registered_prediction_that_changed_since_it_was_pinned_is_refused(tmp_path):
    """Frozen before the phone: the registered file's sha256 is pinned in the config, and a
    file that differs (edited, or predicted again) is refused when the plan is made, one line
    naming the key, the file and both digests, and so is one made at another commit than the
    pinned one; config/paper-predicted.yaml's pins hold."""
    config = paper_config("paper.yaml")
    config["prediction"] = paper_config("paper-predicted.yaml")["prediction"]
    assert prediction_problems(config) == []
    document = json.loads(PREDICTED.read_text())
    document["prediction"]["predictions"][0]["threads"] = 4  # predicted again, for 4 threads
    moved = tmp_path / "predicted_gain.json"
    moved.write_text(json.dumps(document))
    config["prediction"] = {"registered": str(moved), "sha256": pinned(PREDICTED)}
    (problem,) = prediction_problems(config)
    assert problem == (
        f"config key `prediction.sha256`: {moved} has sha256 {pinned(moved)}, not the pinned "
        f"{pinned(PREDICTED)}: it changed after it was registered (register it again, with its "
        "new sha256, only if that is meant)"
    )
    # the commit it was made at is pinned too: the same bytes, claimed for another commit
    registered = {**paper_config("paper-predicted.yaml")["prediction"], "commit": "0123456"}
    config["prediction"] = registered
    made_at = json.loads(PREDICTED.read_text())["measured"]["commit"]
    assert prediction_problems(config) == [
        f"config key `prediction.commit`: {NAME} says it was made at {made_at}, not the "
        "pinned 0123456"
    ]


def test_a_store_of_the_schema_before_scores_is_brought_up_to_it(tmp_path):
    """A store of schema 1 (no score) takes every step up to this one's: the prediction's
    columns (schema 2), then the log error and why a row was not scored (schema 3)."""
    store = tmp_path / "old.sqlite"
    open_store(store).close()
    db = sqlite3.connect(store)
    with db:  # schema 1: summary_rows without the prediction's columns
        for column in SCORE_COLUMNS:
            db.execute(f"ALTER TABLE summary_rows DROP COLUMN {column}")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.close()
    db = open_store(store)
    columns = [row[1] for row in db.execute("PRAGMA table_info(summary_rows)")]
    (version,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    db.close()
    assert columns[-len(SCORE_COLUMNS) :] == SCORE_COLUMNS and version == "3"


def test_foreign_files_are_scored_at_the_rows_both_measured_alike(tmp_path, capsys):
    """Two real llama-bench files (tests/data/llama_bench: the host build and the arm64 build
    under QEMU, the same tiny model): the mechanics only, their gain means nothing."""
    from mnnrepro.store.__main__ import main
    from mnnrepro.store.score import foreign_scores

    store = str(tmp_path / "runs.sqlite")
    files = [
        ROOT / "tests/data/llama_bench" / f"{name}-p64-n16-d0-64.json"
        for name in ("host-x86", "qemu-sme512")
    ]
    ids = [register_foreign(store, str(f))[0] for f in files]
    scores = foreign_scores(store, str(PREDICTED), ids[0][:8], ids[1][:8])
    tests = [json.loads(f.read_text()) for f in files]
    assert len(scores) == len(tests[0]) == 4  # prefill and decode at depths 0 and 64
    predicted = registered_prediction(PREDICTED)["predictions"][0]["phases"]
    for r, base, treat in zip(scores.itertuples(), *tests, strict=True):
        assert (r.prompt_tokens, r.generate_tokens, r.depth) == (
            base["n_prompt"],
            base["n_gen"],
            base["n_depth"],
        )
        assert r.gain == pytest.approx(treat["avg_ts"] / base["avg_ts"] - 1)
        assert r.predicted_gain == predicted[r.phase]["gain"]
        assert r.gain_ci_low is None  # one sample each (-r 1): no interval is made up
        # predicted at 1 thread, measured at 2: another quantity, shown but never scored
        assert r.not_scored.startswith("threads 1 predicted, 2 measured")  # prompt: prefill's
        assert r.prediction_holds_measured is None and pd.isna(r.log_error)
        assert "threads 1 predicted, 2 measured" in r.differences
    assert main(["score", store, str(PREDICTED), ids[0][:8], ids[1][:8]]) == 0
    out = capsys.readouterr().out
    assert "| comparison | prefill | 64 | 0 | 0 | 2 |" in out
    assert "| not scored | - | - | threads 1 predicted, 2 measured; prompt_tokens 512" in out
    assert main(["score", store, str(ROOT / "README.md"), ids[0][:8], ids[1][:8]]) == 1
    assert "README.md: not a readable prediction" in capsys.readouterr().err


def test_a_foreign_file_of_several_models_pairs_each_with_the_same_model(tmp_path):
    """One file benchmarks two models (the real host capture, its rows again under a second
    model's name): each baseline row pairs with the treatment's row of its own model, never
    another's; two files of one model each pair whatever they name it (the test above)."""
    from mnnrepro.store.score import foreign_scores

    real = ROOT / "tests/data/llama_bench/host-x86-p64-n16-d0-64.json"
    rows = json.loads(real.read_text())
    other = [{**r, "model_filename": "other.gguf", "avg_ts": r["avg_ts"] / 2} for r in rows]
    faster = [{**r, "avg_ts": r["avg_ts"] * 1.5} for r in rows + other]
    files = {"base": rows + other, "treat": faster}
    store = str(tmp_path / "runs.sqlite")
    ids = []
    for name, content in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(content))
        ids.append(register_foreign(store, str(tmp_path / f"{name}.json"))[0])
    scores = foreign_scores(store, str(PREDICTED), ids[0][:8], ids[1][:8])
    assert len(scores) == 2 * len(rows)  # each model's rows once, not crossed with the other's
    assert set(scores["measured_models"]) == {"q4.gguf vs q4.gguf", "other.gguf vs other.gguf"}
    assert scores["gain"].to_numpy() == pytest.approx(0.5)  # crossed, -25 % or +200 %


def test_compare_shows_no_answer_where_the_measurement_had_no_interval():
    """A scored row whose measured interval was missing (a degenerate run) stores no answer:
    compare says so instead of reading the null as 'held'."""
    from types import SimpleNamespace

    from mnnrepro.store.compare import predicted_text

    row = {"predicted_gain": 1.78, "predicted_gain_low": 0.92, "predicted_gain_high": 6.74}
    assert predicted_text(SimpleNamespace(**row, measured_holds_prediction=float("nan"))) == (
        "+178.0% [+92.0%, +674.0%], held: -"
    )
    assert predicted_text(SimpleNamespace(**row, measured_holds_prediction=0.0)).endswith(
        "held: no"
    )
    assert predicted_text(SimpleNamespace(**{**row, "predicted_gain": None})) == "-"


def test_a_row_is_scored_with_its_log_error_only_where_the_prediction_is_for_it():
    """The score of a row: both containments and ln((1 + measured) / (1 + predicted)); a
    prediction for another thread count or prompt (not_scored) keeps its predicted gain beside
    the row and scores nothing."""
    predicted = {"gain": 0.8, "low": 0.5, "high": 1.2}
    row = {"gain": 0.35, "gain_ci_low": 0.3, "gain_ci_high": 0.4}
    scored = score_fields({**predicted, "not_scored": ""}, row)
    assert scored["log_error"] == pytest.approx(math.log(1.35 / 1.8), abs=1e-4)
    assert scored["measured_holds_prediction"] is False
    assert scored["prediction_holds_measured"] is False and scored["not_scored"] == ""
    refused = score_fields(
        {**predicted, "not_scored": "prompt_tokens 512 predicted, 64 measured"}, row
    )
    assert refused["predicted_gain"] == 0.8 and refused["log_error"] is None
    assert (
        refused["measured_holds_prediction"] is None
        and refused["prediction_holds_measured"] is None
    )
    assert refused["not_scored"] == "prompt_tokens 512 predicted, 64 measured"
