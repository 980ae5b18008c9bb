"""Every chart is drawn for any legitimate table: the real tables of the shipped archive (the
paper's two MNN 3.6.1 builds on a host), with their values replaced by the extremes that noise
legitimately makes of them (two blocks give a gain interval of [-100 %, +2e26 %]), NaN and
infinities, a single row, no rows. A chart whose scale came from the data unbounded crashed
the renderer (a 1e-30-wide gain axis aborted the process allocating 38 TB; a 2e26 one failed
"Vega-Lite to PNG conversion") and ended the run before its summary and archive."""

from __future__ import annotations

import tarfile

import altair as alt
import numpy as np
import pandas as pd
import pytest

from mnnrepro.analysis import plots, vega_bundle
from mnnrepro.analysis.sweep import SWEEP_SUMMARY_COLUMNS

ARCHIVE = "benchmarks/results/host-sme2-archive.tar.gz"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def shipped(root):
    """The shipped archive's summary.csv and bench.csv (real records)."""
    with tarfile.open(root / ARCHIVE) as tar:
        return {
            name: pd.read_csv(tar.extractfile(f"results/host-sme2/{name}.csv"))
            for name in ("summary", "bench")
        }


def sweep_table(summary: pd.DataFrame) -> pd.DataFrame:
    """A sweep summary over prompt length and threads, built from the archive's summary rows
    (the main point is theirs; the other points repeat them at other settings)."""
    points = {"main": (512, 2), "p128": (128, 2), "p2048": (2048, 2), "t1": (512, 1)}
    rows = []
    for point, (prompt, threads) in points.items():
        for row in summary.to_dict("records"):
            rows.append(
                {
                    **row,
                    "point": point,
                    "prompt_tokens": prompt,
                    "generate_tokens": 64,
                    "thread_num": threads,
                    "claim_gain": 0.81 if row["phase"] == "prefill" else 0.13,
                    "tolerance": 0.1,
                    "problems": "",
                }
            )
    return pd.DataFrame(rows)[SWEEP_SUMMARY_COLUMNS]


def kernels_table(bench: pd.DataFrame) -> pd.DataFrame:
    """kernels.csv's shape: a few engine functions per variant and phase, one an SME2 kernel."""
    rows = []
    for variant in sorted(bench["variant"].unique()):
        for phase in ("prefill", "decode"):
            for i, symbol in enumerate(["MNNGemmInt8AddBiasScale16x32_SME2_w4_Fp16", "memcpy", ""]):
                rows.append(
                    {
                        "device": "host",
                        "phase": phase,
                        "variant": variant,
                        "library": "libMNN.so",
                        "symbol": symbol,
                        "engine_library": True,
                        "sme2_kernel": i == 0,
                        "count": 10 - i,
                        "share": (10 - i) / 27,
                        "unit": "samples",
                    }
                )
    return pd.DataFrame(rows)


GAINS = ("gain", "gain_ci_low", "gain_ci_high")
# the gain columns' extremes: what noise, a dead variant or a broken record makes of them
GAIN_EXTREMES = {
    "two noisy blocks": (0.3, -1.0, 2e24),
    "interval of 1e24 both ways": (0.3, -1e24, 1e24),
    "infinite": (np.inf, -np.inf, np.inf),
    "unknown": (np.nan, np.nan, np.nan),
    "a 1e-30 wide interval": (1e-30, -1e-30, 1e-29),
    "exactly zero": (0.0, 0.0, 0.0),
    "a dead treatment": (-1.0, -1.0, -1.0),
    "a huge gain": (1e12, 1e11, 1e13),
}
TPS_EXTREMES = {
    "1e24 beside 1e-24": lambda n: np.where(np.arange(n) % 2 == 0, 1e24, 1e-24),
    "infinite": lambda n: np.full(n, np.inf),
    "unknown": lambda n: np.full(n, np.nan),
    "zero": lambda n: np.zeros(n),
}


def cases(shipped) -> dict[str, tuple]:
    summary, bench = shipped["summary"], shipped["bench"]
    sweep = sweep_table(summary)
    kernels = kernels_table(bench)
    found = {}
    for name, values in GAIN_EXTREMES.items():
        gains = dict(zip(GAINS, values, strict=True))
        found[f"speedup, {name}"] = (plots.speedup_chart, summary.assign(**gains))
        decode = sweep["phase"] == "decode"  # one phase extreme, the other as measured
        extreme = sweep.copy()
        extreme.loc[decode, list(GAINS)] = values
        found[f"sweep, decode {name}"] = (plots.sweep_chart, extreme)
        everywhere = sweep.assign(**gains)
        found[f"sweep, {name}"] = (plots.sweep_chart, everywhere)
        unclaimed = everywhere.assign(claim_gain=np.nan)
        found[f"sweep, {name}, no claim"] = (plots.sweep_chart, unclaimed)
    for name, values in TPS_EXTREMES.items():
        found[f"runs, {name}"] = (plots.runs_chart, bench.assign(tps=values(len(bench))))
        temperatures = bench.assign(max_temp_before_c=values(len(bench)))
        found[f"temperature, {name}"] = (plots.temperature_chart, temperatures)
        shares = kernels.assign(share=values(len(kernels)))
        found[f"kernels, {name}"] = (plots.kernels_chart, shares)
    for chart, table in [
        (plots.speedup_chart, summary),
        (plots.sweep_chart, sweep),
        (plots.runs_chart, bench),
        (plots.temperature_chart, bench),
        (plots.kernels_chart, kernels),
    ]:
        name = chart.__name__
        found[f"{name}, no rows"] = (chart, table.head(0))
        found[f"{name}, one row"] = (chart, table.head(1))
    return found


def test_the_kept_vega_bundle_is_the_one_vl_convert_makes(shipped, tmp_path):
    """analysis/vega_bundle.py keeps vl-convert's JavaScript bundle: it is the one the
    installed (pinned) vl-convert makes, and a chart's page made with it is altair's own
    `inline=True` page, byte for byte."""
    assert vega_bundle.wanted() == vega_bundle.BUNDLED_BY, (
        "vl-convert changed: `cd workflow/scripts && python -m mnnrepro.analysis.vega_bundle`"
    )
    assert vega_bundle.script() == vega_bundle.made_by_vl_convert()
    chart = plots.speedup_chart(shipped["summary"])
    assert plots.save(chart, str(tmp_path / "kept.html"), str(tmp_path / "c.png")) is None
    chart.save(tmp_path / "altair.html", inline=True)
    assert (tmp_path / "kept.html").read_bytes() == (tmp_path / "altair.html").read_bytes()


@pytest.mark.slow
def test_every_chart_is_drawn_for_every_extreme_empty_and_degenerate_table(shipped, tmp_path):
    failed = {}
    for name, (chart, table) in cases(shipped).items():
        html, png = tmp_path / "c.html", tmp_path / "c.png"
        problem = plots.save(chart(table), str(html), str(png))
        if problem is not None:
            failed[name] = problem
            continue
        assert png.read_bytes().startswith(PNG), name
        assert b"vega-lite" in html.read_bytes(), name
    assert failed == {}


@pytest.mark.parametrize("values", list(GAIN_EXTREMES.values()), ids=list(GAIN_EXTREMES))
def test_the_gain_frame_is_finite_holds_zero_and_is_never_degenerate(values):
    table = pd.DataFrame([dict(zip(GAINS, values, strict=True))])
    low, high = plots.gain_frame(table)
    assert np.isfinite([low, high]).all()
    assert plots.GAIN_FLOOR <= low <= 0.0 <= high
    assert high - low >= plots.MIN_SPAN - 1e-12


def test_an_interval_beyond_the_frame_is_drawn_cut_and_marked_and_its_numbers_kept(shipped):
    summary = shipped["summary"].assign(gain_ci_low=-1.0, gain_ci_high=2e24)
    frame = plots.gain_frame(summary)
    drawn = plots.cut_to_frame(summary, frame)
    assert drawn["cut"].all() and (drawn["gain_ci_high_drawn"] == frame[1]).all()
    assert (drawn["gain_ci_high"] == 2e24).all()  # the table's number is unchanged
    spec = plots.speedup_chart(summary).to_json()
    assert "CIs cut at the frame" in spec and "\u2702" in spec
    # a table whose intervals fit: nothing is marked, and the title says nothing of a cut
    fits = shipped["summary"]
    assert not plots.cut_to_frame(fits, plots.gain_frame(fits))["cut"].any()
    assert "cut at the frame" not in plots.speedup_chart(fits).to_json()


def test_the_speedup_title_names_only_what_is_drawn(shipped):
    """The claim band only where a claim is configured; the reference gains where given."""
    summary = shipped["summary"]
    assert summary["claim_gain"].isna().all()  # the host run judges equality, not a claim
    title = plots.speedup_chart(summary).to_dict()["title"]
    assert "band" not in title and "reference" not in title
    claimed = summary.assign(claim_gain=[0.81, 0.13], tolerance=0.1, reference_gain=[0.57, 0.45])
    title = plots.speedup_chart(claimed).to_dict()["title"]
    assert "band: claim ± tolerance" in title and "diamond: reference gain" in title


def test_a_chart_the_renderer_refuses_leaves_a_note_naming_its_table(tmp_path):
    """The run goes on to its summary and archive: the chart's files say why it is missing."""
    chart = alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x:Q")
    refused = chart.transform_filter("datum.x +* 2")  # valid Vega-Lite, an expression Vega refuses
    html, png = tmp_path / "c.html", tmp_path / "c.png"
    problem = plots.save(refused, str(html), str(png), "results/x/summary.csv")
    assert problem
    assert png.read_bytes().startswith(PNG)
    assert "the numbers are in results/x/summary.csv" in html.read_text()
