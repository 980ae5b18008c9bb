"""The JavaScript (Vega, Vega-Lite, Vega-Embed) that every chart's HTML page inlines, so that
it opens offline, without a CDN.

altair's `inline=True` asks vl-convert to bundle it (`vl_convert.javascript_bundle`): 1.6
CPU-s in every process that asks, for the same 0.9 MB each time for one vl-convert release.
A plot job drew its 3-5 charts in about 4 CPU-s, 40 % of them making this bundle. It is kept
here as that vl-convert release made it (BUNDLE, xz-compressed; BUNDLED_BY names the release
and the Vega-Lite version it was made for), and used where the installed vl-convert is that
release (the pinned one: pyproject.toml, envs/analysis.yaml); any other vl-convert makes its
own, as altair would. The pages are byte for byte altair's own `inline=True` pages
(tests/unit/test_plots.py::test_the_kept_vega_bundle_is_the_one_vl_convert_makes). After an
update of vl-convert, `python -m mnnrepro.analysis.vega_bundle` (from workflow/scripts) makes
and keeps the new release's bundle; then set BUNDLED_BY to what it prints.
"""

from __future__ import annotations

import lzma
from functools import cache
from importlib.metadata import version
from pathlib import Path

import altair as alt
from altair.utils.html import INLINE_HTML_TEMPLATE

BUNDLE = Path(__file__).with_name("vega_bundle.js.xz")
BUNDLED_BY = ("1.9.0.post1", "v6_4")  # vl-convert-python, the Vega-Lite version bundled


def wanted() -> tuple[str, str]:
    """The installed vl-convert release and the Vega-Lite version altair asks it for (its
    SCHEMA_VERSION v6.4.1 as v6_4)."""
    return version("vl-convert-python"), "_".join(alt.SCHEMA_VERSION.split(".")[:2])


def made_by_vl_convert() -> str:
    # a native renderer: loaded to export a chart only
    import vl_convert

    return vl_convert.javascript_bundle(vl_version=wanted()[1])


@cache
def script() -> str:
    """The bundle for the installed vl-convert: the kept one where it is BUNDLED_BY's."""
    if wanted() == BUNDLED_BY:
        return lzma.decompress(BUNDLE.read_bytes()).decode("utf-8")
    return made_by_vl_convert()


class InlineTemplate:
    """altair's inline HTML template, given the bundle (a `template=` for altair)."""

    def render(self, **fields) -> str:
        return INLINE_HTML_TEMPLATE.render(**fields, vegaembed_script=script())


def html_page(chart: alt.TopLevelMixin) -> str:
    """The chart's self-contained HTML page, as `chart.to_html(inline=True)` writes it."""
    return chart.to_html(template=InlineTemplate())


def save_page(chart: alt.TopLevelMixin, path: str) -> None:
    """`chart.save(path, inline=True)`, with the kept bundle."""
    chart.save(path, format="html", template=InlineTemplate())


if __name__ == "__main__":
    BUNDLE.write_bytes(lzma.compress(made_by_vl_convert().encode("utf-8"), preset=9))
    print(f"{BUNDLE}: BUNDLED_BY = {wanted()!r}")
