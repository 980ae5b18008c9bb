"""What each rule that a cluster runs needs: max RSS and wall time from its `benchmark:` file.

Usage: python benchmarks/rule_resources.py --mnn <MNN 3.6.1 checkout> [--cores 2]

Runs, each in a fresh directory with a fresh ccache (cold builds): the quickstart
(`snakemake --cores N`, its synthetic Qwen3-0.6B-shaped export and analysis) and
`config/host-sme2.yaml` (MNN 3.6.1 built from source twice, SME2 OFF/ON, its gate tool and
bandwidth probe). Then reads every `logs/**/*.benchmark.tsv` (Snakemake's per-job max RSS and
wall time) and reports per rule the largest of each. profiles/slurm/profile.yaml sizes its
memory and time from these (tests/unit/test_cited_figures.py checks it leaves room).
Writes results/rule_resources.{md,json}.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402
from real_mnn import snakemake  # noqa: E402


def rule_usage(workdir: Path) -> dict[str, dict]:
    """rule -> {max_rss_mb, wall_s, jobs}: the largest over the rule's jobs."""
    usage: dict[str, dict] = {}
    for tsv in sorted((workdir / "logs").rglob("*.benchmark.tsv")):
        rule = tsv.relative_to(workdir / "logs").parts[0]
        with tsv.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        for row in rows:
            entry = usage.setdefault(rule, {"max_rss_mb": 0.0, "wall_s": 0.0, "jobs": 0})
            rss = float(row["max_rss"]) if row["max_rss"] not in ("", "NA", "-") else 0.0
            entry["max_rss_mb"] = round(max(entry["max_rss_mb"], rss), 1)
            entry["wall_s"] = round(max(entry["wall_s"], float(row["s"])), 1)
            entry["jobs"] += 1
    return usage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnn", type=Path, required=True, help="local MNN 3.6.1 checkout")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="rule-resources-"))
    runs = {}
    for name, configfile, mnn in (
        ("quickstart", "config/config.yaml", None),
        ("host-sme2", "config/host-sme2.yaml", {"source": {"path": str(args.mnn.resolve())}}),
    ):
        os.environ["CCACHE_DIR"] = str(base / name / "ccache")  # cold builds
        run = snakemake(base / name, configfile, mnn, args.cores)
        runs[name] = {"configfile": configfile, "seconds": run["seconds"]}
        runs[name]["rules"] = rule_usage(base / name)
    rules: dict[str, dict] = {}
    for name, run in runs.items():
        for rule, entry in run["rules"].items():
            best = rules.setdefault(rule, {"max_rss_mb": 0.0, "wall_s": 0.0, "from": []})
            best["max_rss_mb"] = max(best["max_rss_mb"], entry["max_rss_mb"])
            best["wall_s"] = max(best["wall_s"], entry["wall_s"])
            best["from"].append(name)
    result = {"cores": args.cores, "runs": runs, "rules": rules}
    took = ", ".join(f"{n} {r['seconds']:.0f} s" for n, r in runs.items())
    lines = [
        "# Memory and time per rule (what profiles/slurm sizes its jobs from)",
        "",
        f"`python benchmarks/rule_resources.py --mnn <MNN 3.6.1> --cores {args.cores}`: the "
        "quickstart and config/host-sme2.yaml, each in a fresh directory with a cold ccache "
        f"({took}); per rule the "
        "largest max RSS and wall time of its jobs (Snakemake's `benchmark:` files). The "
        "paper's Android builds and the 4B export were not run here: the profile scales "
        "those up (see its comments).",
        "",
        "| rule | max RSS (MB) | wall time (s) | measured in |",
        "|---|---:|---:|---|",
    ]
    for rule, entry in sorted(rules.items()):
        lines.append(
            f"| {rule} | {entry['max_rss_mb']:.0f} | {entry['wall_s']:.1f} | "
            f"{', '.join(entry['from'])} |"
        )
    write_results("rule_resources", result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
