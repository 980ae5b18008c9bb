"""The paper's comparison for real: both SME2 builds of MNN from source, through our rules.

Usage: python benchmarks/real_mnn.py --mnn /path/to/MNN [--kleidiai URL]
                                     [--kleidiai-llamacpp URL] [--workdir DIR] [--cores 2]

`--mnn` is a local checkout of MNN release 3.6.1 (the workflow records its commit and refuses
local changes); `--kleidiai` a mirror URL (e.g. file://) of the pinned KleidiAI v1.16.0 tarball,
checked against the same md5 as config/paper.yaml's pin; `--kleidiai-llamacpp` one of the
control engine's KleidiAI v1.24.0 (config/emulated-paper.yaml's pin). Both configs carry the
control engine, llama.cpp from the pinned sdist (PyPI). In a fresh working directory, with a
fresh ccache, it runs:

1. host: `snakemake --configfile config/host-sme2.yaml` (two host builds, SME2 OFF/ON, the
   gate, 10 interleaved llm_bench repetitions per variant, report); then the OFF engine is
   deleted and built again with the warm ccache, the workflow rerun (every raw repetition must
   be kept), and config/paper.yaml's dry run must leave the host results up to date;
2. emulated: `snakemake --configfile config/emulated-paper.yaml` (two linux-arm64 builds run
   by QEMU 11: the gate between the two real builds, the ON build's fallback on a CPU without
   SME, the vector-length sweep, the runtime mask MNN_CPU_TARGET=2), and llama.cpp's
   KleidiAI SME kernels off vs on (GGML_KLEIDIAI_SME=0) gated the same way on every CPU.

It writes benchmarks/results/real_mnn.{json,md}: build times (cold, ccache-warm), artifact
sizes, SME2 kernel counts, the host comparison, the emulated gate, sweep and mask tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import measured_record  # noqa: E402

sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
from mnnrepro.analysis.attribution import phase_summary  # noqa: E402
from mnnrepro.analysis.kernel_sections import change_explained  # noqa: E402
from mnnrepro.design import pairs_of  # noqa: E402

KLEIDIAI_MD5 = "0a9e9008adb6031f9e8cf70dff4a3321"  # config/paper.yaml's pin


def snakemake(
    workdir: Path,
    configfile: str | list[str],
    mnn: dict | None,
    cores: int,
    *args: str,
    llamacpp=None,
) -> dict:
    """Run the workflow (configfile: one, or several in order); returns wall time and output
    (raises with the output on failure)."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        str(cores),
        *args,
        "--configfile",
        *[str(ROOT / c) for c in ([configfile] if isinstance(configfile, str) else configfile)],
    ]
    overrides = {"mnn": mnn, "llamacpp": llamacpp}
    given = [f"{key}={json.dumps(value)}" for key, value in overrides.items() if value]
    cmd += ["--config", *given] if given else []
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"$ {' '.join(cmd)}\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")
    return {"seconds": round(seconds, 1), "log": proc.stdout + proc.stderr}


def ccache_stats() -> dict:
    proc = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=False)
    stats = dict(line.split("\t", 1) for line in proc.stdout.splitlines() if "\t" in line)
    keys = ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss")
    return {k: int(stats.get(k, 0)) for k in keys}


def engines(workdir: Path) -> dict[str, dict]:
    records = {}
    for path in sorted(workdir.glob("results/engines/*/build.json")):
        record = json.loads(path.read_text())
        # MNN's builds list its SME2 kernels (`sme2`), llama.cpp's KleidiAI's (`sme`)
        mnn_sme2 = record.get("sme2") or {
            "sme2_kernel_count": 0,
            "sme2_named_without_sme": [],
            "kleidiai_sme_functions": record["sme"]["kleidiai_sme_functions"],
            "sme_instruction_sites": record["sme"]["sme_instruction_sites"],
        }
        records[record["engine"]] = {
            "kind": record["kind"],
            "key": path.parent.name,
            "platform": record["platform"],
            "target_arch": record.get("target_arch"),
            "flags": record["flags"],
            "build_wall_s": record["build_wall_s"],
            "artifacts": {f["path"]: f["size"] for f in record["files"]},
            "sme2_kernels": mnn_sme2["sme2_kernel_count"],
            "sme2_named_without_sme": mnn_sme2["sme2_named_without_sme"],
            "sme_instruction_sites": mnn_sme2["sme_instruction_sites"],
            "kleidiai_sme_functions": len(mnn_sme2["kleidiai_sme_functions"]),
            "compiler": record["compiler"]["version"],
            "source_commit": record["source"]["commit"],
        }
    return records


def validity(workdir: Path, experiment: str) -> list[dict]:
    rows = []
    for path in sorted(workdir.glob(f"results/{experiment}/validity/*/*.json")):
        doc = json.loads(path.read_text())
        for check in doc["checks"]:
            rows.append(
                {
                    "device": doc["device"],
                    "check": check["name"],
                    "passed": check["passed"],
                    "evidence": check["evidence"],
                }
            )
    return rows


def host_part(workdir: Path, mnn: dict, cores: int) -> dict:
    config = "config/host-sme2.yaml"
    cold = snakemake(workdir, config, mnn, cores)
    cold_stats = ccache_stats()
    built = engines(workdir)
    summary = pd.read_csv(workdir / "results/host-sme2/summary.csv")
    # the OFF engine once more from an empty build directory: ccache is warm now
    off = built["sme2-off"]["key"]
    for stale in (f"results/engines/{off}", f"resources/build/{off}"):
        shutil.rmtree(workdir / stale)
    subprocess.run(["ccache", "--zero-stats"], capture_output=True, check=False)
    # Snakemake would not rebuild an intermediate output while every final one is up to date:
    # ask for the engine, then run the workflow (which must keep every raw repetition)
    snakemake(workdir, config, mnn, cores, f"results/engines/{off}/build.json")
    rebuild = snakemake(workdir, config, mnn, cores)
    warm_stats = ccache_stats()
    rebuilt = engines(workdir)["sme2-off"]
    kept = rebuild["log"].count(": kept (measured earlier)")
    measured_again = rebuild["log"].count(": measured")
    paper_dry = snakemake(workdir, "config/paper.yaml", None, cores, "-n")  # its own source
    host_after = snakemake(workdir, config, mnn, cores, "-n")
    return {
        "workflow_cold_s": cold["seconds"],
        "ccache_cold": cold_stats,
        "engines": built,
        "rebuild_off_warm_s": rebuilt["build_wall_s"],
        "rebuild_same_artifacts": rebuilt["artifacts"] == built["sme2-off"]["artifacts"],
        "ccache_warm": warm_stats,
        "rerun_after_rebuild": {"kept": kept, "measured_again": measured_again},
        "paper_dry_run_then_host_up_to_date": "Nothing to be done" in host_after["log"],
        "paper_dry_run_ok": "This was a dry-run" in paper_dry["log"],
        "summary": summary[
            [
                "device",
                "phase",
                "baseline",
                "treatment",
                "n_pairs",
                "median_baseline_tps",
                "median_treatment_tps",
                "gain",
                "gain_ci_low",
                "gain_ci_high",
                "expectation",
                "verdict",
                "blocks_under_load",
                "max_other_load",
            ]
        ].to_dict(orient="records"),
        "validity": validity(workdir, "host-sme2"),
    }


# `--rederive`: the analysis of a part measured earlier derived again with this commit's code
# (its checks, tables and summary), nothing measured again: only the rules that read records
# rerun, and nothing upstream is rerun for a changed rule file or param
REDERIVE = [
    "--rerun-triggers",
    "mtime",
    "--forcerun",
    "check_emulation",
    "check_validity",
    "collect_kernel_table",
]


def emulated_part(
    workdir: Path, mnn: dict, cores: int, llamacpp: dict | None, extra: tuple = ()
) -> dict:
    run = snakemake(workdir, "config/emulated-paper.yaml", mnn, cores, *extra, llamacpp=llamacpp)
    table = pd.read_csv(workdir / "results/emulated-paper/emulation/synth-tiny.csv")
    table["judged"] = table["judged"].fillna("")
    counts = (
        table.groupby(["device", "variant", "judged"]).size().unstack(fill_value=0).reset_index()
    )
    drift = (
        table[["device", "variant", "prompt", "first_divergence", "judged", "reason"]]
        .query("judged != 'identical'")
        .to_dict(orient="records")
    )
    return {
        "workflow_s": run["seconds"],
        "engines": {k: v for k, v in engines(workdir).items() if v["platform"] == "linux-arm64"},
        "table": counts.to_dict(orient="records"),
        "divergences": drift,
        "cpu_target_lines": sorted(set(table["cpu_target"].dropna())),
        "validity": validity(workdir, "emulated-paper"),
    }


def attribution(workdir: Path, experiment: str, configfile: str) -> dict:
    """What ran, from the experiment's kernels.csv (rule collect_kernel_table): per device x
    variant x phase the SME2 kernels' share of the engine's code and the SME2 kernels that
    ran; per judged pair the change the hot kernels account for."""
    path = workdir / "results" / experiment / "kernels.csv"
    if not path.is_file():
        return {}
    table = pd.read_csv(path, keep_default_na=False)
    comparison = yaml.safe_load((ROOT / configfile).read_text())["comparison"]
    sme2 = table[table["sme2_kernel"].astype(bool) & table["engine_library"].astype(bool)]
    ran = (
        sme2.groupby(["device", "variant", "phase"])
        .apply(lambda g: ", ".join(g.sort_values("count", ascending=False)["symbol"].head(3)))
        .to_dict()
    )
    units = table.groupby("device")["unit"].first().to_dict()  # one profiler per device
    phases = phase_summary(table).to_dict(orient="records")
    for row in phases:
        row["sme2_kernels_ran"] = ran.get((row["device"], row["variant"], row["phase"]), "")
        row["unit"] = units[row["device"]]
    changes = change_explained(table, [(p.baseline, p.treatment) for p in pairs_of(comparison)], 6)
    return {"phases": phases, "changes": changes.to_dict(orient="records")}


def attribution_lines(kernels: dict) -> list[str]:
    if not kernels:
        return ["No kernel attribution in this part (run before `attribution` existed)."]
    lines = [
        "What ran (kernel attribution, rule `profile_kernels`: one profiled invocation per "
        "variant and phase after the timed ones; perf `cpu-clock` samples on the host, "
        "executed translation blocks under QEMU; `kernels.csv`):",
        "",
        "| device | variant | phase | unit | engine code | SME2 kernels | SME2 share "
        "| SME2 kernels that ran (top 3) |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for r in kernels["phases"]:
        share = r["sme2_share"]
        shown = "-" if share is None or share != share else f"{share:.2%}"
        lines.append(
            f"| {r['device']} | {r['variant']} | {r['phase']} | {r['unit']} | "
            f"{r['engine_count']} | {r['sme2_count']} | {shown} | {r['sme2_kernels_ran']} |"
        )
    lines += [
        "",
        "What the hot kernels account for (baseline - treatment counts of the profiled "
        "invocations; the hot kernels are both variants' top 6 engine functions; a share "
        "only for samples, which are CPU time):",
        "",
        "| device | treatment vs baseline | phase | unit | change | in the hot kernels "
        "| share explained |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for c in kernels["changes"]:
        share = c["explained_share"]
        shown = "-" if share is None or share != share else f"{share:.0%}"
        lines.append(
            f"| {c['device']} | {c['treatment']} vs {c['baseline']} | {c['phase']} | "
            f"{c['unit']} | {c['change']} | {c['kernel_change']} | {shown} |"
        )
    return lines


def load_text(row: dict) -> str:
    """How many blocks ran while something else used the CPUs, as the run recorded it."""
    if row.get("blocks_under_load") is None:
        return "-"
    return f"{int(row['blocks_under_load'])}/{row['n_pairs']} ({row['max_other_load']:.2f} CPUs)"


def pct(x: float) -> str:
    return f"{x:+.1%}"


def markdown(result: dict) -> str:
    host, emu = result["host"], result["emulated"]
    lines = [
        "# Real MNN builds through the workflow (benchmarks/real_mnn.py)",
        "",
        f"Measured {result['date']} on {result['machine']['cpus']} CPUs, "
        f"{result['machine']['platform']}, commit {result['measured']['commit']}"
        f"{' (the tree had uncommitted changes)' if result['measured'].get('dirty') else ''}"
        "; MNN checkout "
        f"at {result['mnn_commit']} ({result['mnn_subject']}). Command: "
        f"`{result['measured']['command']}`.",
        *[
            f"Part `{name}` measured {part['measured']['date']} at commit "
            f"{part['measured']['commit'][:10]}"
            f"{' (the tree had uncommitted changes)' if part['measured'].get('dirty') else ''}"
            " (this file written with `--resume`)."
            for name, part in (("host", host), ("emulated", emu))
            if "measured" in part and part["measured"]["commit"] != result["measured"]["commit"]
        ],
        *[
            f"Part `{name}`'s checks and tables derived again at commit "
            f"{part['rederived']['commit'][:10]} ({part['rederived']['date']}, `--rederive`: "
            "nothing measured again)."
            for name, part in (("host", host), ("emulated", emu))
            if "rederived" in part
        ],
        "",
        "## Builds",
        "",
        "| engine | platform | wall (s) | libMNN.so / libggml-cpu.so | libllm.so / libllama.so "
        "| llm_bench / llama-bench | MNN SME2 kernels | SME2-named, no SME instruction "
        "| KleidiAI SME functions | SME instruction sites |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for part in (host, emu):
        for name, e in part["engines"].items():
            art = e["artifacts"]
            lib = art.get("libMNN.so", art.get("libggml-cpu.so", 0))
            llm = art.get("libllm.so", art.get("libllama.so", 0))
            tool = art.get("llm_bench", art.get("llama-bench", 0))
            lines.append(
                f"| {name} | {e['platform']} ({e['target_arch']}) | {e['build_wall_s']} | "
                f"{lib / 1e6:.1f} MB | {llm / 1e6:.1f} MB | {tool / 1e3:.0f} kB | "
                f"{e['sme2_kernels']} | {len(e['sme2_named_without_sme'])} | "
                f"{e['kleidiai_sme_functions']} | {e['sme_instruction_sites']} |"
            )
    cold = host["engines"]["sme2-off"]["build_wall_s"]
    lines += [
        "",
        f"ccache: the host OFF engine rebuilt from an empty build directory with the warm cache "
        f"took {host['rebuild_off_warm_s']} s vs {cold} s cold "
        f"({host['rebuild_off_warm_s'] / cold:.2f}x; ccache {host['ccache_warm']}); its "
        f"artifacts are byte-identical: {host['rebuild_same_artifacts']}. Rerunning the workflow "
        f"after that rebuild kept {host['rerun_after_rebuild']['kept']} raw repetitions and "
        f"measured {host['rerun_after_rebuild']['measured_again']} again. After "
        "config/paper.yaml's dry run the host experiment is still up to date: "
        f"{host['paper_dry_run_then_host_up_to_date']}.",
        "",
        f"## Host comparison (config/host-sme2.yaml, whole workflow {host['workflow_cold_s']} s)",
        "",
        "| treatment vs baseline | phase | baseline tok/s | treatment tok/s | gain | 95 % CI "
        "| expectation | verdict | blocks under load (max other load) |",
        "|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for row in host["summary"]:
        lines.append(
            f"| {row['treatment']} vs {row['baseline']} | {row['phase']} | "
            f"{row['median_baseline_tps']:.1f} | "
            f"{row['median_treatment_tps']:.1f} | {pct(row['gain'])} | "
            f"[{pct(row['gain_ci_low'])}, {pct(row['gain_ci_high'])}] | {row['expectation']} | "
            f"{row['verdict']} | {load_text(row)} |"
        )
    lines += ["", "Validity checks:", ""]
    lines += [
        f"- {v['check']}: {'pass' if v['passed'] else 'FAIL'} — {v['evidence']}"
        for v in host["validity"]
    ]
    lines += ["", *attribution_lines(result.get("host_kernels", {}))]
    lines += [
        "",
        f"## Emulated SME2 (config/emulated-paper.yaml, whole workflow {emu['workflow_s']} s)",
        "",
        "Greedy answers (16 tokens, 3 prompts) of each variant on each QEMU CPU vs the same "
        "variant on `qemu-no-sme`, teacher-forced: every device fed `qemu-no-sme`'s tokens and "
        "every step judged, the top-1 and the logits (identical / equivalent within rounding / "
        "wrong / crashed; docs/correctness.md):",
        "",
    ]
    kinds = ["identical", "equivalent within rounding", "wrong", "crashed"]
    lines += [
        "| device | variant | " + " | ".join(kinds) + " |",
        "|---|---|" + "---:|" * len(kinds),
    ]
    for row in emu["table"]:
        lines.append(
            f"| {row['device']} | {row['variant']} | "
            + " | ".join(str(row.get(k, 0)) for k in kinds)
            + " |"
        )
    lines += ["", "Divergences, with the logit margins that judged them:", ""]
    lines += [
        f"- {d['device']} / {d['variant']} / {d['prompt']!r}: {d['judged']} — {d['reason']}"
        for d in emu["divergences"]
    ]
    lines += ["", f"Runtime mask lines printed by the engine: {emu['cpu_target_lines']}", ""]
    lines += ["Validity checks (the paper's pair and the runtime-mask pair, per device):", ""]
    lines += [
        f"- {v['device']}: {v['check']}: {'pass' if v['passed'] else 'FAIL'} — {v['evidence']}"
        for v in emu["validity"]
    ]
    lines += ["", *attribution_lines(result.get("emulated_kernels", {}))]
    return "\n".join(lines) + "\n"


def part(cache: Path, resume: bool, measure, rederive=None) -> dict:
    """Measure one part and keep its result beside the runs (a later part may fail). With
    `rederive` (a part measured earlier): its analysis derived again by this commit's code,
    keeping what was measured then (its times and its `measured` record)."""
    if resume and cache.is_file():
        cached = json.loads(cache.read_text())
        if rederive is None:
            return cached
        fresh = rederive()
        result = {
            **fresh,
            "workflow_s": cached["workflow_s"],
            "measured": cached["measured"],
            "rederived": measured_record(),
        }
        cache.write_text(json.dumps(result, indent=1, default=str))
        return result
    result = {**measure(), "measured": measured_record()}  # when and at which commit this part
    cache.write_text(json.dumps(result, indent=1, default=str))
    return result


def git_out(mnn: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mnn), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnn", type=Path, required=True, help="local MNN 3.6.1 checkout")
    parser.add_argument("--kleidiai", help="URL of the KleidiAI v1.16.0 tarball (a mirror)")
    parser.add_argument(
        "--kleidiai-llamacpp",
        help="URL of the KleidiAI v1.24.0 tag archive (a mirror) for the control engine",
    )
    parser.add_argument("--workdir", type=Path, help="run here (kept); default: a temp dir")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--resume", action="store_true", help="reuse a part already measured in --workdir"
    )
    parser.add_argument(
        "--rederive",
        action="store_true",
        help="with --resume: derive the emulated part's checks and tables again with this "
        "commit's code (nothing is measured again)",
    )
    args = parser.parse_args(argv)
    mnn = args.mnn.resolve()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="real-mnn-"))
    os.environ["CCACHE_DIR"] = str(workdir / "ccache")  # a fresh cache: the first builds are cold
    host_mnn = {"source": {"path": str(mnn)}}
    kleidiai = {"version": "v1.16.0", "url": args.kleidiai, "md5": KLEIDIAI_MD5}
    emulated_mnn = {**host_mnn, **({"kleidiai": kleidiai} if args.kleidiai else {})}
    llamacpp = None
    if args.kleidiai_llamacpp:  # the emulated config's pin, fetched from the mirror given
        pinned = yaml.safe_load((ROOT / "config" / "emulated-paper.yaml").read_text())
        llamacpp = {
            **pinned["llamacpp"],
            "kleidiai": {**pinned["llamacpp"]["kleidiai"], "url": args.kleidiai_llamacpp},
        }
    measured = measured_record()
    measured["command"] = (
        f"python benchmarks/real_mnn.py --mnn <MNN 3.6.1> --kleidiai <KleidiAI v1.16.0 "
        "tarball, md5 as pinned> --kleidiai-llamacpp <KleidiAI v1.24.0 tag archive, md5 as "
        f"pinned> --cores {args.cores}"
        + (" --resume" if args.resume else "")
        + (" --rederive" if args.rederive else "")
    )
    result = {
        "measured": measured,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "mnn_commit": git_out(mnn, "rev-parse", "HEAD"),
        "mnn_subject": git_out(mnn, "log", "-1", "--format=%s"),
        "command": f"python benchmarks/real_mnn.py --mnn <MNN 3.6.1> --cores {args.cores}",
        "host": part(
            workdir / "host.json",
            args.resume,
            lambda: host_part(workdir / "host", host_mnn, args.cores),
        ),
        "emulated": part(
            workdir / "emulated.json",
            args.resume,
            lambda: emulated_part(workdir / "emulated", emulated_mnn, args.cores, llamacpp),
            (
                (
                    lambda: emulated_part(
                        workdir / "emulated", emulated_mnn, args.cores, llamacpp, REDERIVE
                    )
                )
                if args.rederive
                else None
            ),
        ),
    }
    # read from the kept working directory, so a --resume of parts measured before the
    # attribution existed still shows what the workflow's profiles there hold
    result["host_kernels"] = attribution(workdir / "host", "host-sme2", "config/host-sme2.yaml")
    result["emulated_kernels"] = attribution(
        workdir / "emulated", "emulated-paper", "config/emulated-paper.yaml"
    )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "real_mnn.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    (OUT / "real_mnn.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
