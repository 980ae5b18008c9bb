"""One self-contained HTML page from the store (vega inlined, no server, no network): every
judged run's gains with their intervals per device and phase, a line per run and pair named by
the treatment engine's version (a build's commit), the claim band where a claim
was judged, the verdict and whether the validity checks passed at a glance; each point links
to its run's summary, which the page holds below the chart, rendered (markdown_it)."""

from __future__ import annotations

import html

import altair as alt
import pandas as pd

from mnnrepro.analysis.vega_bundle import html_page
from mnnrepro.store.compare import checks_table, failed_names, short_version, treatment_versions
from mnnrepro.store.schema import open_store

LABEL_LIMIT = 420  # pixels of a row's label: the run, its engine's commit and the pair
QUERY = (
    "SELECT r.experiment, r.registered_at, s.* FROM summary_rows s "
    "JOIN runs r USING (run_id) WHERE r.judged = 1 ORDER BY r.registered_at, r.run_id"
)


def dashboard_data(store: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(the summary rows of every judged run, with a label and a link; the validity checks
    per run, device and pair; the runs)."""
    db = open_store(store)
    try:
        runs = pd.read_sql_query(
            "SELECT run_id, experiment, origin, judged, registered_at, summary_md FROM runs "
            "ORDER BY registered_at, run_id",
            db,
        )
        checks = checks_table(db, list(runs.loc[runs["judged"] == 1, "run_id"]))
        rows = pd.read_sql_query(QUERY, db)
        rows["treatment_engine"] = treatment_versions(db, rows)
        rows["failed_checks"] = failed_names(rows, checks)
    finally:
        db.close()
    # a series per run, named by its experiment, id and the treatment engine's version (commit)
    rows["run"] = (
        rows["experiment"]
        + " "
        + rows["run_id"].str[:8]
        + " @"
        + rows["treatment_engine"].map(short_version)
    )
    rows["pair"] = rows["treatment"] + " vs " + rows["baseline"]
    rows["series"] = rows["run"] + " · " + rows["pair"]  # one line per run and pair
    rows["link"] = "#run-" + rows["run_id"]
    rows["checks"] = rows["checks_passed"].map({1: "passed", 0: "failed"})
    rows["band_low"] = rows["claim_gain"] - rows["tolerance"]
    rows["band_high"] = rows["claim_gain"] + rows["tolerance"]
    if not checks.empty:
        checks["run"] = checks["experiment"] + " " + checks["run_id"].str[:8]
        checks["pair"] = (checks["treatment"] + " vs " + checks["baseline"]).fillna("(device)")
        checks["series"] = checks["run"] + " · " + checks["pair"]
        checks["link"] = "#run-" + checks["run_id"]
        failed = checks["checks"] - checks["checks_passed"]
        checks["state"] = ["all passed" if f == 0 else "failed" for f in failed]
        checks["passed"] = checks["checks_passed"].astype(str) + "/" + checks["checks"].astype(str)
    return rows, checks, runs


def gains_chart(rows: pd.DataFrame) -> alt.Chart:
    base = alt.Chart(rows)
    y = alt.Y("series:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
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
            "failed_checks",
            "interval",
        ],
    )
    zero = base.mark_rule(strokeDash=[4, 4], color="gray").encode(x=alt.datum(0.0))
    layers = [band] if rows["claim_gain"].notna().any() else []  # the band where one is judged
    return (
        alt.layer(*layers, ci, points, zero)
        .properties(width=360, height=alt.Step(24))
        .facet(row=alt.Row("device:N"), column=alt.Column("phase:N"))
        .properties(title="Gains with their intervals, per run (a point links to its summary)")
    )


def checks_chart(checks: pd.DataFrame) -> alt.Chart:
    """Validity at a glance: a cell per run and pair (rows) and device (columns), green where
    every check passed; the failed checks' names in its tooltip; a cell links to the run."""
    return (
        alt.Chart(checks)
        .mark_rect(stroke="white")
        .encode(
            x=alt.X("device:N", title=None),
            y=alt.Y("series:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)),
            color=alt.Color(
                "state:N",
                scale=alt.Scale(domain=["all passed", "failed"], range=["#4c9a2a", "#c0392b"]),
                title="validity checks",
            ),
            href="link:N",
            tooltip=["run", "pair", "device", "model", "passed", "failed_checks"],
        )
        .properties(
            title="Validity checks per run, pair and device (a cell links to its summary)",
            height=alt.Step(20),
        )
    )


def run_sections(runs: pd.DataFrame) -> str:
    parts = [
        "<style>.summary table{border-collapse:collapse}"
        ".summary td,.summary th{border:1px solid #ccc;padding:2px 6px}</style>",
        "<h1>Runs</h1>",
    ]
    for r in runs.itertuples():
        parts.append(
            f'<h2 id="run-{r.run_id}">{html.escape(r.experiment)} {r.run_id[:12]} '
            f"({html.escape(r.origin)}, registered {r.registered_at})</h2>"
        )
        parts.append(
            rendered(r.summary_md) if r.summary_md else "<p>foreign results: never judged</p>"
        )
    return "\n".join(parts)


def rendered(summary_md: str) -> str:
    """A run's summary.md as HTML (CommonMark with its tables), raw HTML in it escaped: a
    summary's text (a config's, an engine's output) never becomes markup of the page. Its
    headings move two levels down, under the run's own."""
    # the dashboard's rendering only
    from markdown_it import MarkdownIt

    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    page = markdown.render(summary_md)
    for level in (4, 3, 2, 1):
        page = page.replace(f"<h{level}>", f"<h{level + 2}>").replace(
            f"</h{level}>", f"</h{level + 2}>"
        )
    return f'<div class="summary">{page}</div>'


def write_dashboard(store: str, out: str) -> None:
    rows, checks, runs = dashboard_data(store)
    charts = [gains_chart(rows)] if not rows.empty else []
    charts += [checks_chart(checks)] if not checks.empty else []
    if not charts:
        text = pd.DataFrame({"t": ["no judged run in the store"]})
        charts = [alt.Chart(text).mark_text().encode(text="t")]
    # the verdicts' colours and the checks' are two scales, not one legend
    chart = alt.vconcat(*charts).resolve_scale(color="independent") if charts[1:] else charts[0]
    head, body_end, tail = html_page(chart).rpartition("</body>")
    # the page's own </body>, the last one (the inlined vega source holds the text too)
    page = head + run_sections(runs) + "\n" + body_end + tail
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(page)
