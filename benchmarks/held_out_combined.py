"""The published figures of several benchmarks/held_out.py runs scored together, priced
instruction by instruction.

Usage: python benchmarks/held_out_combined.py RESULT.json [RESULT.json ...]
  e.g. benchmarks/results/held_out-mnn.json benchmarks/results/held_out-llamacpp.json

Each engine's counting run is a long QEMU run, and each held_out.py page scores its own
figures: each interval there comes from the model error of that page's other figures. Here the
figures of every page given are scored as one set: each keeps the prediction and log error its
run made (priced instruction by instruction), and its interval is made again from the other
figures of all pages (held_out.with_others_error, the same function). Writes
benchmarks/results/held_out-combined.{md,json}, naming each page and the commit it was
measured at.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from held_out import scores, summary_lines, with_others_error  # noqa: E402
from provenance import write_results  # noqa: E402

from mnnrepro.analysis.cost_model import LEVEL  # noqa: E402

# what a page's priced figure is, as with_others_error reads it (the rest is made again)
KEPT = ("engine", "model", "threads", "published_gain", "log_error")


def combined(pages: list[dict]) -> list[dict]:
    """Every priced figure of the pages (held_out.py's results), each with the interval the
    other figures of all of them give it."""
    rows = [
        {
            **{k: r[k] for k in KEPT},
            "predicted": {k: r["predicted"][k] for k in ("gain", "unpriced_share")},
        }
        for page in pages
        for r in page["per_instruction"]["figures"]
    ]
    return with_others_error(rows)


def markdown(rows: list[dict], summary: dict, pages: dict[str, dict]) -> list[str]:
    made = "; ".join(
        f"`{name}` at {page['measured']['commit']} ({page['per_instruction']['llvm_mca']})"
        for name, page in pages.items()
    )
    lines = [
        "# Published SME2 figures held out, scored together (benchmarks/held_out_combined.py)",
        "",
        f"`python benchmarks/held_out_combined.py {' '.join(pages)}`: each figure's prediction "
        f"and log error as its page made them ({made}), priced instruction by instruction; "
        "each interval made again from the root-mean-square log error of every other "
        f"figure here, at {LEVEL:.0%}.",
        "",
        "| engine | model | threads | gain | predicted | log error | interval | inside | "
        "high / low |",
        "|---|---|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        got = r["predicted"]
        lines.append(
            f"| {r['engine']} | {r['model']} | {r['threads']} | {r['published_gain']:+.0%} | "
            f"{got['gain']:+.0%} | {r['log_error']:+.3f} | [{got['low']:+.0%}, "
            f"{got['high']:+.0%}] | {'yes' if r['inside'] else 'no'} | {r['width']:.2f} |"
        )
    return [*lines, "", *summary_lines(summary, float("nan"))[:2],
            f"- root-mean-square log error: {summary['rms_log_error']:.3f}"]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="held_out.py's result files (JSON)")
    args = parser.parse_args(argv)
    pages = {name: json.loads(Path(name).read_text()) for name in args.results}
    rows = combined(list(pages.values()))
    summary = scores(rows)
    lines = markdown(rows, summary, pages)
    sources = {name: page["measured"] for name, page in pages.items()}
    write_results(
        "held_out-combined", {"pages": sources, "figures": rows, "summary": summary}, lines
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
