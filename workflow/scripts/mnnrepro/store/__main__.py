"""`python -m mnnrepro.store register STORE FILE...`, `... compare STORE RUN... [--csv F]` and
`... dashboard STORE OUT.html` (docs/store.md). One line on a bad archive or store; the store
is then unchanged."""

from __future__ import annotations

import argparse
import sys

from mnnrepro.errors import ReproError
from mnnrepro.store.compare import compare_runs, markdown
from mnnrepro.store.dashboard import write_dashboard
from mnnrepro.store.foreign import register_foreign
from mnnrepro.store.register import register_archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mnnrepro.store", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    reg = sub.add_parser(
        "register", help="register runs' archives (.tar.gz), or foreign llama-bench/llm_bench JSON"
    )
    reg.add_argument("store")
    reg.add_argument("archives", nargs="+")
    cmp = sub.add_parser("compare", help="compare registered runs (ids or unique prefixes)")
    cmp.add_argument("store")
    cmp.add_argument("runs", nargs="+")
    cmp.add_argument("--csv", help="also write the table as CSV here")
    page = sub.add_parser("dashboard", help="one self-contained HTML page of the store")
    page.add_argument("store")
    page.add_argument("out")
    args = parser.parse_args(argv)
    try:
        if args.command == "register":
            for archive in args.archives:
                register = register_archive if archive.endswith(".tar.gz") else register_foreign
                run_id, added = register(args.store, archive)
                print(f"{'registered' if added else 'already registered'} {run_id} ({archive})")
            return 0
        if args.command == "dashboard":
            write_dashboard(args.store, args.out)
            print(f"wrote {args.out}")
            return 0
        table = compare_runs(args.store, args.runs)
        if args.csv:
            table.to_csv(args.csv, index=False)
        print(markdown(table))
        return 0
    except (ReproError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
