"""One self-contained HTML page from the store (vega inlined, no server, no network): every
judged run's gains with their intervals per device and phase, the claim band where a claim
was judged, the verdict and whether the validity checks passed at a glance; each point links
to its run's summary, which the page holds below the chart."""

from __future__ import annotations

import html
import json

import altair as alt
import pandas as pd

from mnnrepro.store.schema import open_store

QUERY = (
    "SELECT r.experiment, r.registered_at, s.* FROM summary_rows s "
    "JOIN runs r USING (run_id) WHERE r.judged = 1 ORDER BY r.registered_at, r.run_id"
)


def dashboard_data(store: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the summary rows of every judged run, with a label and a link; the runs)."""
    db = open_store(store)
    try:
        rows = pd.read_sql_query(QUERY, db)
        runs = pd.read_sql_query(
            "SELECT run_id, experiment, origin, registered_at, config, summary_md FROM runs "
            "ORDER BY registered_at, run_id", db,
        )  # fmt: skip
        versions = {
            (run, engine): version
            for run, engine, version in db.execute("SELECT run_id, engine, version FROM engines")
        }
    finally:
        db.close()
    variants = {r.run_id: json.loads(r.config).get("variants", {}) for r in runs.itertuples()}
    rows["treatment_engine"] = [
        str(versions.get((r.run_id, variants[r.run_id].get(r.treatment, {}).get("engine")), ""))
        for r in rows.itertuples()
    ]
    # a series per run, named by its experiment, id and the treatment engine's version (commit)
    rows["run"] = (
        rows["experiment"] + " " + rows["run_id"].str[:8] + " @" + rows["treatment_engine"].str[:10]
    )
    rows["pair"] = rows["treatment"] + " vs " + rows["baseline"]
    rows["link"] = "#run-" + rows["run_id"]
    rows["checks"] = rows["checks_passed"].map({1: "passed", 0: "failed"})
    rows["band_low"] = rows["claim_gain"] - rows["tolerance"]
    rows["band_high"] = rows["claim_gain"] + rows["tolerance"]
    return rows, runs


def gains_chart(rows: pd.DataFrame) -> alt.Chart:
    base = alt.Chart(rows)
    y = alt.Y("run:N", title=None)
    band = base.mark_rect(opacity=0.15, color="green").encode(x="band_low:Q", x2="band_high:Q", y=y)
    ci = base.mark_rule().encode(
        x=alt.X("gain_ci_low:Q", title="gain (speedup - 1)"), x2="gain_ci_high:Q", y=y
    )
    points = base.mark_point(filled=True, size=80).encode(
        x="gain:Q",
        y=y,
        color=alt.Color("verdict:N"),
        shape=alt.Shape(
            "checks:N", scale=alt.Scale(domain=["passed", "failed"], range=["circle", "cross"])
        ),
        href="link:N",
        tooltip=[
            "run",
            "pair",
            "treatment_engine",
            "gain",
            "gain_ci_low",
            "gain_ci_high",
            "verdict",
            "checks",
            "interval",
        ],
    )
    zero = base.mark_rule(strokeDash=[4, 4], color="gray").encode(x=alt.datum(0.0))
    layers = [band] if rows["claim_gain"].notna().any() else []  # the band where one is judged
    return (
        alt.layer(*layers, ci, points, zero)
        .properties(width=520, height=alt.Step(24))
        .facet(row=alt.Row("device:N"), column=alt.Column("phase:N"))
        .properties(title="Gains with their intervals, per run (a point links to its summary)")
    )


def run_sections(runs: pd.DataFrame) -> str:
    parts = ["<h1>Runs</h1>"]
    for r in runs.itertuples():
        parts.append(
            f'<h2 id="run-{r.run_id}">{html.escape(r.experiment)} {r.run_id[:12]} '
            f"({html.escape(r.origin)}, registered {r.registered_at})</h2>"
        )
        parts.append(f"<pre>{html.escape(r.summary_md or 'foreign results: never judged')}</pre>")
    return "\n".join(parts)


def write_dashboard(store: str, out: str) -> None:
    rows, runs = dashboard_data(store)
    if rows.empty:
        chart = (
            alt.Chart(pd.DataFrame({"t": ["no judged run in the store"]}))
            .mark_text()
            .encode(text="t")
        )
    else:
        chart = gains_chart(rows)
    head, body_end, tail = chart.to_html(inline=True).rpartition("</body>")
    # the page's own </body>, the last one (the inlined vega source holds the text too)
    page = head + run_sections(runs) + "\n" + body_end + tail
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(page)
