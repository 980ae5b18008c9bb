"""Does a code change leave the quickstart's derived outputs byte for byte the same? (issue 79:
the job specs and the types must not change a result.)

Usage: python benchmarks/derived_identity.py BEFORE [--workdir DIR]

Runs the quickstart (`snakemake --cores 2`, the embedded default) in a clone at commit BEFORE,
then copies its results, resources, logs and Snakemake's records into a clone of HEAD and
derives every analysis output there again from the same raw records, with HEAD's code
(`--forcerun` of the analysis rules, `--allowed-rules` so that nothing is measured again:
snakemake would otherwise rebuild the model, whose checkpoint is temporary). Compares each
derived file byte for byte. Writes benchmarks/results/derived_identity.{md,json}.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import head_commit, write_results  # noqa: E402

ANALYSIS_RULES = [
    "decide_pair_modes",
    "check_validity",
    "collect_bench_table",
    "collect_engine_tests",
    "compute_summary",
    "explain_gain",
    "plot",
    "write_summary_report",
]
DERIVED = [  # results/quickstart/<file>: what the analysis rules write
    "modes/host.json",
    "bench.csv",
    "engine_tests.csv",
    "summary.csv",
    "summary.json",
    "mechanism.csv",
    "mechanism.json",
    "summary.md",
    *(
        f"plots/{chart}.{ext}"
        for chart in ("runs", "speedup", "temperature")
        for ext in ("html", "png")
    ),
]


def clone_at(commit: str, dest: Path) -> None:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", commit], check=True)


def snakemake(repo: Path, *args: str) -> None:
    argv = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(
            f"$ {' '.join(argv)} (in {repo})\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )


def compare(before: str, workdir: Path) -> dict:
    head = head_commit(ROOT)
    old, new = workdir / "before", workdir / "head"
    clone_at(before, old)
    snakemake(old)
    kept = workdir / "derived-before"
    shutil.copytree(old / "results" / "quickstart", kept)
    clone_at(head, new)
    for part in ("results", "resources", "logs", ".snakemake"):
        shutil.copytree(old / part, new / part, symlinks=True)
    derived = [f"results/quickstart/{name}" for name in DERIVED]
    snakemake(new, *derived, "--allowed-rules", *ANALYSIS_RULES, "--forcerun", *ANALYSIS_RULES)
    files = {
        name: filecmp.cmp(kept / name, new / "results" / "quickstart" / name, shallow=False)
        for name in DERIVED
    }
    return {"before": before, "head": head, "identical": files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="the commit whose quickstart is derived again at HEAD")
    parser.add_argument("--workdir", help="where the clones go (default: temporary)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(args.workdir or scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        result = compare(args.before, workdir)
    same = [n for n, s in result["identical"].items() if s]
    lines = [
        "# The quickstart's derived outputs at HEAD against an earlier commit",
        "",
        f"`python benchmarks/derived_identity.py {args.before}`: the quickstart run at "
        f"{result['before']}, its analysis derived again at {result['head']} from the same raw "
        "records (the analysis rules forced, nothing measured again), each file compared byte "
        "for byte.",
        "",
        f"**{len(same)} of {len(result['identical'])} identical.**",
        "",
        "| file (results/quickstart/) | byte for byte |",
        "|---|---|",
        *[
            f"| `{n}` | {'identical' if s else '**differs**'} |"
            for n, s in result["identical"].items()
        ],
    ]
    write_results("derived_identity", result, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
