"""`python -m mnnrepro.store register STORE FILE...`, `... compare STORE [RUN...] [--device D]
[--model M] [--variant V] [--engine-commit C] [--across device|model] [--csv F]
[--checks-csv F]`, `... score STORE PREDICTION BASELINE TREATMENT [--csv F]` and
`... dashboard STORE OUT.html` (docs/store.md). One line on a bad archive
or store; the store is then unchanged."""

from __future__ import annotations

import argparse
import sys

from mnnrepro.errors import ReproError
from mnnrepro.store.compare import Selection, compare_runs, markdown
from mnnrepro.store.dashboard import write_dashboard
from mnnrepro.store.foreign import register_foreign
from mnnrepro.store.register import register_archive
from mnnrepro.store.score import foreign_scores
from mnnrepro.store.score import markdown as score_markdown


def command_line() -> argparse.ArgumentParser:
    """The commands and their arguments."""
    parser = argparse.ArgumentParser(prog="python -m mnnrepro.store", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    reg = sub.add_parser(
        "register", help="register runs' archives (.tar.gz), or foreign llama-bench/llm_bench JSON"
    )
    reg.add_argument("store")
    reg.add_argument("archives", nargs="+")
    cmp = sub.add_parser("compare", help="compare registered runs (default: every judged one)")
    cmp.add_argument("store")
    cmp.add_argument("runs", nargs="*", help="run ids or unique prefixes, the first the reference")
    for option, what in [
        ("--device", "only this device's rows"),
        ("--model", "only this model's rows"),
        ("--variant", "only pairs with this variant"),
        ("--engine-commit", "the runs with an engine at this commit (a prefix), in order given"),
        ("--across", "rows may differ from the first run's in this: device or model"),
    ]:
        cmp.add_argument(option, action="append", default=[], help=f"{what} (repeatable)")
    cmp.add_argument("--csv", help="also write the gains as CSV here")
    cmp.add_argument("--checks-csv", help="also write the validity checks as CSV here")
    score = sub.add_parser(
        "score", help="score a prediction against two registered foreign files (OFF, then ON)"
    )
    score.add_argument("store")
    score.add_argument(
        "prediction", help="a prediction.json or benchmarks/results/predicted_gain*.json"
    )
    score.add_argument("baseline", help="the baseline build's foreign run (id or prefix)")
    score.add_argument("treatment", help="the treatment build's foreign run (id or prefix)")
    score.add_argument("--csv", help="also write the scores as CSV here")
    page = sub.add_parser("dashboard", help="one self-contained HTML page of the store")
    page.add_argument("store")
    page.add_argument("out")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = command_line().parse_args(argv)
    try:
        if args.command == "register":
            for archive in args.archives:
                register = register_archive if archive.endswith(".tar.gz") else register_foreign
                run_id, added = register(args.store, archive)
                print(f"{'registered' if added else 'already registered'} {run_id} ({archive})")
            return 0
        if args.command == "score":
            scores = foreign_scores(args.store, args.prediction, args.baseline, args.treatment)
            if args.csv:
                scores.to_csv(args.csv, index=False)
            print(score_markdown(scores))
            return 0
        if args.command == "dashboard":
            write_dashboard(args.store, args.out)
            print(f"wrote {args.out}")
            return 0
        selection = Selection(
            runs=tuple(args.runs),
            devices=tuple(args.device),
            models=tuple(args.model),
            variants=tuple(args.variant),
            engine_commits=tuple(args.engine_commit),
            across=tuple(args.across),
        )
        gains, checks = compare_runs(args.store, selection)
        if args.csv:
            gains.to_csv(args.csv, index=False)
        if args.checks_csv:
            checks.to_csv(args.checks_csv, index=False)
        print(markdown(gains, checks))
        return 0
    except (ReproError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
