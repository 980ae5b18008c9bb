"""altair charts: per-repetition throughput and speedup with CI against the claim band."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from mnnrepro.analysis.vega_bundle import save_page
from mnnrepro.phases import ALL_PHASES

PHASE_ORDER = list(ALL_PHASES)  # prefill, decode, then the vision phases where measured


def runs_chart(bench: pd.DataFrame) -> alt.Chart:
    """One point per repetition, per variant and phase; the tick is the median."""
    data = bench[["device", "model", "variant", "phase", "block", "tps"]].copy()
    variants = sorted(data["variant"].unique())
    base = alt.Chart(data).encode(
        x=alt.X("variant:N", sort=variants, title="variant"),
        color=alt.Color("variant:N", sort=variants, legend=None),
    )
    points = base.mark_circle(size=45, opacity=0.7).encode(
        y=alt.Y("tps:Q", title="tokens / s", scale=alt.Scale(zero=False)),
        tooltip=[
            "device",
            "model",
            "variant",
            "phase",
            "block",
            alt.Tooltip("tps:Q", format=".2f"),
        ],
    )
    medians = base.mark_tick(size=30, thickness=2, color="black").encode(y="median(tps):Q")
    return (
        alt.layer(points, medians)
        .properties(width=160, height=220)
        .facet(
            column=alt.Column("phase:N", sort=PHASE_ORDER, title=None),
            row=alt.Row("device:N", title=None),
        )
        .resolve_scale(y="independent")
        .properties(title="Throughput per repetition (tick = median)")
    )


def gain_tooltip(*fields: str) -> list:
    """Device, model, the given fields, and the gain with its CI as percentages."""
    gains = [alt.Tooltip(f"{g}:Q", format="+.1%") for g in ("gain", "gain_ci_low", "gain_ci_high")]
    return ["device", "model", *fields, *gains]


# The gain axis: a gain (speedup - 1) is never below -100 %; its frame reaches at most twice the
# largest gain drawn, and at least +400 % (5x). A CI of two noisy blocks can span [-100 %,
# +2e26 %]: such an end is drawn cut at the frame, marked, and its number stays in the table.
GAIN_FLOOR, GAIN_REACH, GAIN_CAP = -1.0, 4.0, 1000.0
MIN_SPAN = 0.1  # a frame narrower than 10 points is widened around its middle
GAIN_COLUMNS = ("gain", "gain_ci_low", "gain_ci_high")


def gain_frame(data: pd.DataFrame, also: tuple[str, ...] = ()) -> tuple[float, float]:
    """The gain axis' domain for these rows: finite, at least MIN_SPAN wide, holding zero,
    every drawable gain and the columns `also` (the claim band, the reference), within
    [GAIN_FLOOR, the reach]. Whatever the data (empty, NaN, infinite, 1e26), the frame is
    one a renderer can draw: its scale never comes from the data unbounded."""
    values = pd.to_numeric(data[list(GAIN_COLUMNS + also)].stack(), errors="coerce")
    finite = values[np.isfinite(values)].clip(GAIN_FLOOR, GAIN_CAP)
    gains = pd.to_numeric(data["gain"], errors="coerce")
    gains = gains[np.isfinite(gains)].clip(GAIN_FLOOR, GAIN_CAP)
    reach = max(GAIN_REACH, 2 * gains.max()) if not gains.empty else GAIN_REACH
    low = max(GAIN_FLOOR, min([0.0, *finite]))
    high = min(reach, max([0.0, *finite]))
    if high - low < MIN_SPAN:
        middle = (high + low) / 2
        low = max(GAIN_FLOOR, middle - MIN_SPAN / 2)
        high = low + MIN_SPAN
    return float(low), float(high)


def cut_to_frame(data: pd.DataFrame, frame: tuple[float, float]) -> pd.DataFrame:
    """The gain columns as drawn (`<column>_drawn`: within the frame, NaN where unknown) and
    `cut`: the interval or the gain reaches beyond the frame (an infinite end too), so the
    chart marks that row and its title points to the table."""
    low, high = frame
    data = data.copy()
    cut = pd.Series(False, index=data.index)
    for column in GAIN_COLUMNS:
        values = pd.to_numeric(data[column], errors="coerce").astype(float)
        cut |= (values < low) | (values > high)
        data[f"{column}_drawn"] = values.clip(low, high)
    data["cut"] = cut
    data["cut_mark"] = np.where(cut, "CI cut at the frame", "")
    return data


def gain_title(data: pd.DataFrame) -> str:
    cut = ", CIs cut at the frame (marked): numbers in the table" if data["cut"].any() else ""
    return "gain (speedup - 1)" + cut


def claimed(data: pd.DataFrame) -> bool:
    return bool(pd.to_numeric(data["claim_gain"], errors="coerce").notna().any())


def speedup_data(summary: pd.DataFrame) -> tuple[pd.DataFrame, tuple[float, float]]:
    """The summary with each row's label and claim band, cut to the frame that shows the
    gains, the bands and the reference gains; and that frame."""
    data = summary.copy()
    data["label"] = data["device"] + " / " + data["model"]
    data["band_low"] = data["claim_gain"] - data["tolerance"]
    data["band_high"] = data["claim_gain"] + data["tolerance"]
    if "reference_gain" not in data:
        data["reference_gain"] = np.nan
    frame = gain_frame(data, ("band_low", "band_high", "reference_gain"))
    return cut_to_frame(data, frame), frame


def speedup_chart(summary: pd.DataFrame) -> alt.Chart:
    """Gain (speedup - 1) with its CI, the claim band where a claim is configured, and the
    reference gains where the config gives them (not judged: another machine's)."""
    if summary.empty:
        return note_chart("no speedups: every device is emulated", "Speedup")
    data, frame = speedup_data(summary)
    y = alt.Y("label:N", title=None, sort=sorted(data["label"].unique()))
    scale = alt.Scale(domain=list(frame), clamp=True)
    base = alt.Chart()
    band = (
        base.transform_filter("isValid(datum.claim_gain)")
        .mark_bar(opacity=0.2, color="green", height=18, clip=True)
        .encode(x=alt.X("band_low:Q", scale=scale), x2="band_high:Q", y=y)
    )
    rule = base.mark_rule(strokeWidth=2, clip=True).encode(
        x=alt.X(
            "gain_ci_low_drawn:Q", title=gain_title(data), axis=alt.Axis(format="+%"), scale=scale
        ),
        x2="gain_ci_high_drawn:Q",
        y=y,
    )
    point = base.mark_point(filled=True, size=70, clip=True).encode(
        x="gain_drawn:Q",
        y=y,
        color=alt.Color("verdict:N"),
        tooltip=gain_tooltip("phase", "verdict"),
    )
    reference = (
        base.transform_filter("isValid(datum.reference_gain)")
        .mark_point(shape="diamond", size=80, color="gray", clip=True)
        .encode(x="reference_gain:Q", y=y, tooltip=gain_tooltip("phase", "reference_gain"))
    )
    cut = (
        base.transform_filter("datum.cut")
        .mark_text(text="✂", dy=-10, color="firebrick")
        .encode(x="gain_ci_high_drawn:Q", y=y, tooltip=gain_tooltip("phase", "cut_mark"))
    )
    zero = base.mark_rule(strokeDash=[4, 4], color="gray").encode(x=alt.datum(0.0))
    return (
        alt.layer(band, rule, point, reference, cut, zero, data=data)
        .properties(width=380, height=alt.Step(28))
        .facet(row=alt.Row("phase:N", sort=PHASE_ORDER, title=None))
        .properties(title=f"Speedup of treatment over baseline ({speedup_legend(data)})")
    )


def speedup_legend(data: pd.DataFrame) -> str:
    """What the speedup chart's marks are, those it draws only."""
    parts = ["bar: CI"]
    parts += ["band: claim ± tolerance"] if claimed(data) else []
    parts += ["diamond: reference gain"] if data["reference_gain"].notna().any() else []
    parts += ["✂: CI cut at the frame"] if data["cut"].any() else []
    return "; ".join(parts)


def note_chart(text: str, title: str) -> alt.Chart:
    """A chart that says why there is nothing to plot (an empty spec would render blank)."""
    return (
        alt.Chart(pd.DataFrame({"text": [text]}))
        .mark_text(size=14)
        .encode(text="text:N")
        .properties(width=380, height=60, title=title)
    )


def save(chart: alt.Chart, html: str, png: str, table: str = "its table") -> str | None:
    """Self-contained HTML (vega inlined, no CDN: analysis/vega_bundle.py) and a PNG rendered
    by vl-convert. A chart the renderer refuses leaves a note naming the table in its place
    (HTML and PNG alike), so a figure never ends the run before its summary and archive;
    returns the renderer's error then, None when the chart was drawn."""
    try:
        save_page(chart, html)
        chart.save(png, format="png", scale_factor=2.0)
        return None
    except Exception as err:  # vl-convert raises ValueError, altair its own: any, kept as text
        problem = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        title = chart.title if isinstance(getattr(chart, "title", None), str) else "chart"
        note = note_chart(f"not drawn ({problem[:120]}): the numbers are in {table}", title)
        save_page(note, html)
        note.save(png, format="png", scale_factor=2.0)
        return problem


def temperature_chart(bench: pd.DataFrame) -> alt.Chart:
    """Hottest thermal zone before each invocation, in run order (drift and throttling)."""
    data = bench[bench["phase"] == "prefill"][
        ["device", "model", "variant", "run_order", "max_temp_before_c"]
    ].dropna()
    if data.empty:
        return note_chart(
            "no temperature sensors readable on these devices", "Temperature over the run"
        )
    variants = sorted(data["variant"].unique())
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("run_order:Q", title="invocation (run order)"),
            y=alt.Y(
                "max_temp_before_c:Q",
                title="hottest zone before the run (°C)",
                scale=alt.Scale(zero=False),
            ),
            color=alt.Color("variant:N", sort=variants),
            detail="model:N",
            tooltip=["device", "model", "variant", "run_order", "max_temp_before_c"],
        )
        .properties(width=380, height=200)
        .facet(row=alt.Row("device:N", title=None))
        .properties(title="Temperature over the run")
    )


def _gain_vs(data: pd.DataFrame, x: str, title: str, series: str, log_x: bool) -> alt.Chart:
    """Gain with its CI against one swept value, a line per phase and value of `series`;
    the claim band (claim ± tolerance) where a claim is configured. The gain axis is
    gain_frame's: a CI beyond it is cut at the frame and marked (its numbers are in the
    table)."""
    frame = gain_frame(data, ("band_low", "band_high"))
    data = cut_to_frame(data, frame)
    y_scale = alt.Scale(domain=list(frame), clamp=True)
    base = alt.Chart(data).mark_point(clip=True)
    scale = alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False)
    ticks = sorted(data[x].dropna().astype(int).unique().tolist())
    x_enc = alt.X(f"{x}:Q", title=title, scale=scale, axis=alt.Axis(values=ticks, format="d"))
    color = alt.Color("phase:N", sort=PHASE_ORDER)
    band = (
        base.transform_filter("isValid(datum.claim_gain)")
        .mark_bar(opacity=0.25, color="green", size=14, clip=True)
        .encode(x=x_enc, y=alt.Y("band_low:Q", scale=y_scale), y2="band_high:Q")
    )
    bars = base.mark_rule(strokeWidth=1.5, clip=True).encode(
        x=x_enc, y="gain_ci_low_drawn:Q", y2="gain_ci_high_drawn:Q", color=color
    )
    line = base.mark_line(point=True, clip=True).encode(
        x=x_enc,
        y=alt.Y("gain_drawn:Q", title=gain_title(data), axis=alt.Axis(format="+%"), scale=y_scale),
        color=color,
        strokeDash=alt.StrokeDash(f"{series}:N"),
        tooltip=gain_tooltip("point", "phase", "prompt_tokens", "generate_tokens", "thread_num"),
    )
    cut = (
        base.transform_filter("datum.cut")
        .mark_text(text="✂", dx=8, color="firebrick")
        .encode(x=x_enc, y="gain_ci_high_drawn:Q", tooltip=gain_tooltip("point", "cut_mark"))
    )
    zero = base.mark_rule(strokeDash=[4, 4], color="gray").encode(y=alt.datum(0.0))
    return alt.layer(band, bars, line, cut, zero).properties(width=260, height=200)


def sweep_chart(summary: pd.DataFrame) -> alt.Chart:
    """sweep/summary.csv: gain vs prompt length and gain vs threads, per phase, with CIs."""
    data = summary.dropna(subset=["gain"]).copy()
    if data.empty:
        return note_chart("no sweep points measured on a real device", "Gain across the sweep")
    data["thread_num"] = data["thread_num"].astype("Int64").astype(str)
    data["band_low"] = data["claim_gain"] - data["tolerance"]
    data["band_high"] = data["claim_gain"] + data["tolerance"]
    label = data["device"] + " / " + data["model"] + ": " + data["baseline"] + " → "
    data["pair"] = label + data["treatment"]
    # each chart holds the points that vary its own value around the main point
    if not (data["point"] == "main").any():
        return note_chart("the sweep's main point has no gain", "Gain across the sweep")
    # each variant's own SME2 thread count ("-") unless the point sets one
    data["sme_cores"] = pd.to_numeric(data.get("cpu_sme_core_num", pd.Series(index=data.index)))
    own = data["sme_cores"].isna()
    main = data[data["point"] == "main"].iloc[0]
    same = {k: data[k] == main[k] for k in ("prompt_tokens", "generate_tokens", "thread_num")}
    charts = []
    by_sme = data[same["prompt_tokens"] & same["generate_tokens"] & same["thread_num"] & ~own]
    data = data[own]  # the other charts: points that leave the SME2 threads as they are
    same = {k: v[own] for k, v in same.items()}
    by_prompt = data[same["generate_tokens"] & same["thread_num"]]
    if by_prompt["prompt_tokens"].nunique() > 1:
        charts.append(_gain_vs(by_prompt, "prompt_tokens", "prompt tokens P", "thread_num", True))
    by_threads = data[same["prompt_tokens"] & same["generate_tokens"]]
    if by_threads["thread_num"].nunique() > 1:
        by_threads = by_threads.assign(threads=pd.to_numeric(by_threads["thread_num"]))
        charts.append(_gain_vs(by_threads, "threads", "threads", "prompt_tokens", False))
    by_decode = data[same["prompt_tokens"] & same["thread_num"]]
    if by_decode["generate_tokens"].nunique() > 1:
        charts.append(_gain_vs(by_decode, "generate_tokens", "decode tokens N", "thread_num", True))
    if by_sme["sme_cores"].nunique() > 0:
        charts.append(_gain_vs(by_sme, "sme_cores", "SME2 threads", "prompt_tokens", False))
    if not charts:
        return note_chart("the sweep has no point beside the main one", "Gain across the sweep")
    return (
        alt.hconcat(*charts)
        .resolve_scale(strokeDash="independent")
        .properties(title=f"Gain across the sweep ({'; '.join(sorted(data['pair'].unique()))})")
    )


def kernels_chart(kernels: pd.DataFrame, top: int = 6) -> alt.Chart:
    """kernels.csv: per device x phase, each variant's top engine functions by their share of
    the profile, SME2 kernels coloured apart (what ran, and where the time went)."""
    engine = kernels[kernels["engine_library"].astype(str).str.lower() == "true"].copy()
    if engine.empty:
        return note_chart("no engine function was profiled", "Where the time goes")
    engine["function"] = engine["symbol"].fillna("").replace("", "(unnamed)")
    engine["sme2"] = (
        engine["sme2_kernel"].astype(str).str.lower().map({"true": "SME2 kernel", "false": "other"})
    )
    keys = ["device", "phase", "variant"]
    best = (
        engine.sort_values("count", ascending=False)
        .groupby(keys, sort=True)
        .head(top)
        .assign(profile=lambda d: d["device"] + " / " + d["phase"] + " / " + d["variant"])
    )
    return (
        alt.Chart(best)
        .mark_bar()
        .encode(
            x=alt.X("share:Q", title="share of the profile", axis=alt.Axis(format="%")),
            y=alt.Y("function:N", sort="-x", title=None),
            color=alt.Color(
                "sme2:N",
                title=None,
                scale=alt.Scale(domain=["SME2 kernel", "other"], range=["#d62728", "#7f7f7f"]),
            ),
            row=alt.Row("profile:N", title=None, header=alt.Header(labelAngle=0)),
            tooltip=["device", "variant", "phase", "library", "function", "count", "unit"],
        )
        .resolve_scale(y="independent")
        .properties(width=380, title=f"Where the time goes: top {top} engine functions")
    )
