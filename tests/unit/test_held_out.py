"""benchmarks/held_out.py's scoring of the published figures: each figure's interval takes its
model error from the other figures' log errors alone, and the summary is what its rows say.
The counts are a real QEMU profile's (tests/data/prediction/kernels-ort-vl512.csv), the
figures the real published ones (benchmarks/held_out_figures.yaml)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mnnrepro.analysis.cost_model import CostModel
from mnnrepro.analysis.instruction_prices import priced_rows
from mnnrepro.analysis.prediction import Target, weights
from mnnrepro.analysis.token_work import mixes, per_token
from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.models.shapes import SHAPES

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from held_out import (  # noqa: E402
    FIGURES,
    RUNS,
    counted_cases,
    failed_checks,
    leave_one_out,
    per_instruction,
    run_of,
    scores,
)
from held_out_combined import combined  # noqa: E402
from test_instruction_prices import ENCODINGS, LOAD, SDOT, SMOPA, counted, prices  # noqa: E402

KERNELS = ROOT / "tests" / "data" / "prediction" / "kernels-ort-vl512.csv"
# a figure's engine -> the config key of the engine kind its counting run must build
ENGINE_KEYS = {"mnn": "build", "llama.cpp": "llamacpp"}


def cases(n: int) -> list[dict]:
    """The first n published figures, each predicted from the same real counts for its model."""
    kernels = pd.read_csv(KERNELS, keep_default_na=False, na_values=[""])
    tokens = {"prefill": 32, "decode": 8}
    base, treat = (
        per_token(mixes(kernels, "qemu-sme2-vl512", "synth-tiny", v), tokens)
        for v in ("ort-no-kleidiai", "ort-default")
    )
    figures = yaml.safe_load(FIGURES.read_text())["figures"]
    out = []
    for figure in figures[:n]:
        model = CostModel.read(
            ROOT / "config/cost_model.yaml", "c1-ultra", "dimensity-9500", figure["model"]
        )
        target = Target.of(model, weights(model.phone_shape) / weights(SHAPES["tiny"]), 128, 4)
        p = {"threads": [figure["threads"]] * 2}
        gain = figure["with_sme2"] / figure["without_sme2"] - 1
        priced = CostModel.read(
            ROOT / "config/cost_model.yaml", "c1-ultra", "dimensity-9500", figure["model"],
            "per_instruction",
        )  # fmt: skip
        out.append({"figure": figure, "gain": gain, "p": p, "model": model, "target": target,
                    "mixes": (base, treat), "priced_model": priced})  # fmt: skip
    return out


def test_each_figures_interval_takes_its_model_error_from_the_others_alone():
    rows = leave_one_out(cases(3), "prefill")
    errors = [r["log_error"] for r in rows]
    for i, r in enumerate(rows):
        others = errors[:i] + errors[i + 1 :]
        assert r["others"] == 2
        assert r["model_error_log_sd"] == pytest.approx(math.sqrt(sum(e * e for e in others) / 2))
        assert r["inside"] == (
            r["predicted"]["low"] <= r["published_gain"] <= r["predicted"]["high"]
        )
    (alone,) = leave_one_out(cases(1), "prefill")
    assert alone["others"] == 0 and alone["model_error_log_sd"] == 0
    summary = scores(rows)
    assert summary["predicted"] == 3 and summary["inside"] == sum(r["inside"] for r in rows)
    assert summary["rms_log_error"] == pytest.approx(math.sqrt(sum(e * e for e in errors) / 3))
    assert summary["median_abs_log_error"] == pytest.approx(sorted(map(abs, errors))[1])
    assert scores([]) == {"predicted": 0}


def test_each_counted_figure_names_its_engines_run_its_model_and_a_pair_at_its_thread_count():
    """A figure is predicted from the pair its `counted` names in its counting run (its `run`,
    its engine's by default: held_out.RUNS): that run must be its engine's, count the figure's
    model's layer, compare that pair, run it at the figure's thread count with the figure's
    engine, and the cost model must price the figure's own model. A figure not counted says
    why (`not_counted`)."""
    data = yaml.safe_load(FIGURES.read_text())
    costs = yaml.safe_load((ROOT / "config/cost_model.yaml").read_text())["models"]
    assert all(("counted" in f) != ("not_counted" in f) for f in data["figures"])
    for figure in (f for f in data["figures"] if "counted" in f):
        engine, config_file, _ = RUNS[run_of(figure)]
        assert engine == figure["engine"]
        config = yaml.safe_load((ROOT / config_file).read_text())
        counted = figure["counted"]
        assert config["models"][counted["model"]]["synthetic"]["shape"] in SHAPES
        comparison = config["comparison"]
        pairs = [comparison, *comparison.get("also", [])]
        assert {"baseline": counted["baseline"], "treatment": counted["treatment"]} in [
            {k: p[k] for k in ("baseline", "treatment")} for p in pairs
        ]
        for side in ("baseline", "treatment"):
            variant = config["variants"][counted[side]]
            assert variant["runtime"]["thread_num"] == figure["threads"], (figure, side)
            engine = kind_of_spec(config["engines"][variant["engine"]])
            assert engine.config_key == ENGINE_KEYS[figure["engine"]], (figure, side)
        assert figure["model"] in costs


def test_a_figure_whose_counted_pair_failed_a_validity_check_is_not_predicted():
    """A pair whose SME2 kernels did not run where the figure's did (or whose answers differ)
    was not counted doing what the figure measured: the figure is listed as not predicted,
    naming the failed check; passing checks, another model's and another pair's do not."""
    counted = {"model": "m-layer", "baseline": "off-2t", "treatment": "on-2t"}
    figure = {"engine": "llama.cpp", "model": "llama-3.2-1b", "threads": 2,
              "without_sme2": 124, "with_sme2": 191, "counted": counted}  # fmt: skip
    document = {"predictions": [{"model": "m-layer", "baseline": "off-2t", "treatment": "on-2t"}]}

    def check(name, passed, model="m-layer", pair=("off-2t", "on-2t")):
        return {"name": name, "passed": passed, "model": model, "pair": list(pair),
                "evidence": f"{name} said so"}  # fmt: skip

    checks = [
        check("correctness gate", True),
        check("SME2 kernels ran in on-2t, not in off-2t (profiled)", False),
        check("SME2 kernels ran elsewhere", False, model="other-layer"),
        check("SME2 kernels ran at 1 thread", False, pair=("off-1t", "on-1t")),
    ]
    assert [c["name"] for c in failed_checks(checks, counted)] == [
        "SME2 kernels ran in on-2t, not in off-2t (profiled)"
    ]
    data = {"figures": [figure], "prompt_tokens": 128}
    cases, (missing,) = counted_cases({"llama.cpp": ({}, document, checks)}, data)
    assert cases == []
    assert "failed the workflow's validity checks" in missing["why"]
    assert "SME2 kernels ran in on-2t, not in off-2t (profiled) (" in missing["why"]
    assert "elsewhere" not in missing["why"] and "1 thread" not in missing["why"]


def test_priced_per_instruction_each_interval_is_the_others_error_alone():
    """The same figures with counts priced instruction by instruction (the loop's real
    llvm-mca prices, tests/data/llvm-mca/): each interval is the prediction widened by the
    other figures' root-mean-square log error alone, at the stated level, and holds its
    figure exactly when its own error is within that."""

    def profile(variant: str, phase: str, n: int) -> dict:
        if variant == "on":
            row = counted("gemm", {ENCODINGS[SMOPA]: 3 * n, ENCODINGS[SDOT]: n}, sme=3 * n)
        else:
            row = counted("gemm", {ENCODINGS[SDOT]: 12 * n, ENCODINGS[LOAD]: 6 * n}, sme=0)
        keys = {"device": "qemu", "model": "layer", "variant": variant, "phase": phase}
        return {**keys, "rows": [row]}

    phases = {"startup": 1, "prefill": 32, "decode": 8}
    table = priced_rows(
        [profile(v, p, n) for v in ("off", "on") for p, n in phases.items()], prices()
    )
    figures = cases(3)
    for c in figures:
        c["p"].update(baseline="off", treatment="on", model="layer")
        c.update(device="qemu", tokens={"prefill": 32, "decode": 8})
    rows = per_instruction(figures, {"mnn": (table, "")}, 32, "prefill")
    errors = [r["log_error"] for r in rows]
    z = 1.2815515655446004  # the central 80 %
    for i, r in enumerate(rows):
        sd = math.sqrt(sum(e * e for j, e in enumerate(errors) if j != i) / 2)
        assert r["model_error_log_sd"] == pytest.approx(sd)
        assert r["width"] == pytest.approx(math.exp(2 * z * sd))
        assert r["inside"] == (abs(r["log_error"]) <= z * sd)
        assert r["predicted"]["unpriced_share"] == 0


def test_pages_scored_together_give_each_figure_the_error_of_all_the_others():
    """held_out_combined: figures of two pages (two engines' counting runs) keep their
    predictions and log errors; each interval takes the root-mean-square error of every other
    figure of both pages; one page alone gets back the intervals it had."""
    page = [
        {"engine": "mnn", "model": "m", "threads": t, "published_gain": 0.5, "log_error": e,
         "predicted": {"gain": 0.5 / math.exp(e) + math.expm1(-e), "unpriced_share": 0.0}}
        for t, e in ((1, -0.3), (2, 0.1))
    ]  # fmt: skip
    other = [{**page[0], "engine": "llama.cpp", "log_error": -0.6}]
    z = 1.2815515655446004  # the central 80 %

    def pages(*rows):
        return [{"per_instruction": {"figures": list(r)}} for r in rows]

    both = combined(pages(page, other))
    assert [r["engine"] for r in both] == ["mnn", "mnn", "llama.cpp"]
    for r, errors in zip(both, ([0.1, -0.6], [-0.3, -0.6], [-0.3, 0.1]), strict=True):
        sd = math.sqrt(sum(e * e for e in errors) / 2)
        assert r["model_error_log_sd"] == pytest.approx(sd) and r["others"] == 2
        assert r["width"] == pytest.approx(math.exp(2 * z * sd))
        assert r["inside"] == (abs(r["log_error"]) <= z * sd)
    alone = combined(pages(page))
    assert [r["model_error_log_sd"] for r in alone] == pytest.approx([0.1, 0.3])
