"""MNN's SME2 kernels at every streaming vector length, and the fix.

Usage:
    python benchmarks/mnn_vector_length.py --workdir DIR --source mnn=/src/MNN-3.6.1 \
        --source mnn-master=/src/MNN-4d40bdb \
        --kleidiai v1.16.0=file:///src/kleidiai-v1.16.0.tar.gz \
        --static 3.2.5=/src/MNN-3.2.5 --static 3.4.1=/src/MNN-3.4.1 [--cores 2]

It runs config/mnn-vector-length.yaml through the workflow (`snakemake --cores N`): MNN 3.6.1,
master 4d40bdb and 3.6.1 with patches/mnn-sme2-vector-length.patch, each cross-built for
linux-arm64 with SME2 ON and run by QEMU 11 on a CPU without SME and with SME2 at 128 ... 2048
bits; every build compared, teacher-forced, with itself on the CPU without SME. `--source`
gives a local checkout for the tree (`mnn`) or an engine, in place of the config's pinned
GitHub commit (this network cannot reach GitHub); `--kleidiai` a mirror URL of a KleidiAI
tag's archive (the config's md5 still checks it); `--static` a release that is only read: its
SME2 assembly compared with the others' (3.2.5 and 3.4.1 cannot run a model exported by the
pinned llmexport and MNN 3.6.1's converter). The config is written, with those changes only,
to <workdir>/mnn-vector-length.yaml. A rerun in the same working directory measures only what
is missing.

It writes benchmarks/results/mnn_vector_length.{json,md}: per source and vector length the
agreement with the NEON path (identical / rounding / wrong / crashed answers), which SME2
kernels ran (QEMU's executed blocks), what the engine printed about the CPU, and per source
what its CPU backend reads of the vector length and its SME2 assembly (files, sha256).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import measured_record, write_results  # noqa: E402
from real_mnn import engines, git_out, snakemake  # noqa: E402

sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
from mnnrepro.analysis.attribution import phase_summary  # noqa: E402
from mnnrepro.analysis.divergence import CRASHED, IDENTICAL, ROUNDING, WRONG  # noqa: E402

KINDS = {IDENTICAL: "identical", ROUNDING: "rounding", WRONG: "wrong", CRASHED: "crashed"}

CONFIG = ROOT / "config" / "mnn-vector-length.yaml"
EXPERIMENT = "mnn-vector-length"
MODEL = "synth-tiny"
# what would tell MNN's CPU backend the streaming vector length: the instructions (as text or
# as the .inst word of `rdsvl x?, #1`), the SVE/SME count instructions and Linux's prctl
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".c", ".S"}
NOT_BACKEND = {"kleidiai", "sme2_asm"}  # folders under source/backend/cpu that are not its own
VECTOR_LENGTH_READS = re.compile(r"rdsvl|cntw|cntb|PR_SME_GET_VL|0x04bf58")


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return key, value


def workflow_parser(description: str, sources: bool = True) -> argparse.ArgumentParser:
    """The arguments of a benchmark that runs an emulated experiment through the workflow:
    local checkouts (`--source`, where it builds MNN), KleidiAI mirrors, its working directory
    and cores."""
    parser = argparse.ArgumentParser(description=description)
    if sources:
        parser.add_argument("--source", type=key_value, action="append", default=[])
    parser.add_argument("--kleidiai", type=key_value, action="append", default=[])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--cores", type=int, default=2)
    return parser


def workdir_of(args: argparse.Namespace) -> Path:
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir


def derived_config(sources: dict[str, str], mirrors: dict[str, str]) -> dict:
    """config/mnn-vector-length.yaml with local checkouts, KleidiAI mirrors and the patch's
    absolute path (the workflow runs in another directory)."""
    config = yaml.safe_load(CONFIG.read_text())
    builds = {name: spec["build"] for name, spec in config["engines"].items()}
    for name, path in sources.items():
        if name == "mnn":
            config["mnn"]["source"] = {"path": str(Path(path).resolve())}
        elif name in builds:
            builds[name]["source"] = {"path": str(Path(path).resolve())}
        else:
            raise SystemExit(f"--source {name}=...: no such tree or engine in {CONFIG.name}")
    for pin in [
        config["mnn"]["kleidiai"],
        *(b["kleidiai"] for b in builds.values() if "kleidiai" in b),
    ]:
        if pin["version"] in mirrors:
            pin["url"] = mirrors[pin["version"]]
    for build in builds.values():
        for patch in build.get("patches", []):
            patch["path"] = str(ROOT / patch["path"])
    return config


def source_facts(source: dict) -> dict:
    """What a built tree's CPU backend reads of the streaming vector length, and its SME2
    assembly (files, and lines whose comments name 512 bits); `source` is the engine's
    build.json record of its tree (a patched copy's path where it was patched)."""
    path = Path(source["path"])
    cpu = path / "source/backend/cpu"
    backend = [
        f
        for f in sorted(cpu.rglob("*"))
        if f.is_file() and f.suffix in SOURCE_SUFFIXES and not NOT_BACKEND & set(f.parts)
    ]
    reads = [
        f"{f.relative_to(path)}:{n}"
        for f in backend
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
        if VECTOR_LENGTH_READS.search(line)
    ]
    asm = sorted(f for f in (path / "source/backend").rglob("*.S") if "sme2" in f.name.lower())
    digest = hashlib.sha256()
    for f in asm:  # the kernels' text, file by file: equal digests, the same kernels
        digest.update(f"{f.relative_to(path)}\0".encode() + f.read_bytes())
    assumes = [
        f"{f.relative_to(path)}:{n}: {line.strip()}"
        for f in asm
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
        if "512" in line
    ]
    return {
        "commit": source["commit"],
        "subject": git_out(Path(source.get("patched_from", path)), "log", "-1", "--format=%s"),
        "patches": [Path(p["path"]).name for p in source.get("patches", [])],
        "sme2_asm_files": [str(f.relative_to(path)) for f in asm],
        "sme2_asm_sha256": digest.hexdigest(),
        "cpu_backend_vector_length_reads": reads,
        "sme2_asm_lines_naming_512": assumes,
    }


def agreement(workdir: Path, experiment: str = EXPERIMENT) -> pd.DataFrame:
    """Per variant and device: its answers judged against the same variant's on the
    experiment's reference CPU (results/<experiment>/emulation/<model>.csv)."""
    table = pd.read_csv(
        workdir / f"results/{experiment}/emulation/{MODEL}.csv", keep_default_na=False
    )
    table["vl"] = pd.to_numeric(table["sme_vector_length_bits"], errors="coerce").fillna(0)
    rows = []
    for (variant, device), g in table.groupby(["variant", "device"]):
        kinds = g["judged"].value_counts()
        unknown = set(kinds.index) - set(KINDS)
        if unknown:  # every answer is counted in exactly one column
            raise SystemExit(f"{variant} on {device}: judged {sorted(unknown)}, not {list(KINDS)}")
        drift = pd.to_numeric(g["max_logit_diff_sd"], errors="coerce")
        first = pd.to_numeric(g["first_top1_difference"], errors="coerce").dropna()
        rows.append(
            {
                "source": variant,
                "device": device,
                "vector_length_bits": int(g["vl"].iloc[0]),
                "prompts": len(g),
                **{column: int(kinds.get(kind, 0)) for kind, column in KINDS.items()},
                "max_logit_diff_sd": None if drift.isna().all() else float(drift.max()),
                "first_top1_difference": None if first.empty else int(first.min()),
                "engine_line": g["engine_line"].iloc[0],
            }
        )
    return pd.DataFrame(rows).sort_values(["source", "vector_length_bits", "device"])


def emulated_speed(workdir: Path) -> pd.DataFrame:
    """Median tok/s per source, device and phase under QEMU: recorded, never judged (an
    emulated CPU's speed says nothing of a real one's; it shows only that the fix costs the
    512-bit path nothing it could see)."""
    bench = pd.read_csv(workdir / f"results/{EXPERIMENT}/bench.csv")
    table = bench.groupby(["variant", "device", "phase"])["tps"].agg(["median", "count"])
    return table.reset_index().rename(columns={"variant": "source", "median": "median_tps"})


def printed_before_the_device_line(workdir: Path) -> list[dict]:
    """What each source printed before MNN's `The device supports:` line, per device (the
    benchmark's raw records keep llm_bench's stdout): the patched build's note."""
    seen = {}
    for path in sorted(workdir.glob(f"results/{EXPERIMENT}/raw/*/{MODEL}/*/rep-*.json")):
        stdout = json.loads(path.read_text()).get("llm_bench_stdout", "")
        head = stdout.split("The device supports:")[0].splitlines()
        lines = [x for x in head if x.strip() and not x.startswith("CPU Group")]
        device, source = path.parts[-4], path.parts[-2]
        seen.setdefault((source, device), set()).update(lines)
    return [
        {"source": source, "device": device, "printed": sorted(lines)}
        for (source, device), lines in sorted(seen.items())
        if lines
    ]


def kernels_ran(workdir: Path, experiment: str = EXPERIMENT) -> pd.DataFrame:
    """Per source, device and phase: the engine's executed blocks and the SME2 kernels'
    (analysis/attribution.phase_summary), and the three SME2 kernels that ran most."""
    kernels = pd.read_csv(workdir / f"results/{experiment}/kernels.csv", keep_default_na=False)
    sme2 = kernels[kernels["sme2_kernel"] & kernels["engine_library"]]
    top = sme2.groupby(["variant", "device", "phase", "symbol"])["count"].sum()
    rows = []
    for row in phase_summary(kernels).itertuples():
        ran = top.get((row.variant, row.device, row.phase), pd.Series(dtype=int))
        rows.append(
            {
                "source": row.variant,
                "device": row.device,
                "phase": row.phase,
                "engine_blocks": int(row.engine_count),
                "sme2_blocks": int(row.sme2_count),
                "sme2_kernels_top": [
                    f"{s} ({int(c)})" for s, c in ran.sort_values(ascending=False).head(3).items()
                ],
            }
        )
    return pd.DataFrame(rows).sort_values(["source", "device", "phase"])


def markdown(result: dict) -> list[str]:
    out = [
        "# MNN's SME2 kernels at every streaming vector length (benchmarks/mnn_vector_length.py)",
        "",
        f"Command: `{result['measured']['command']}`; the config as run: "
        "config/mnn-vector-length.yaml with the local checkouts and KleidiAI mirrors below "
        f"(this invocation of the workflow: {result['workflow_s_this_invocation']} s; a "
        "rerun measures only what is missing, so the builds' own times are in the table).",
        "",
        "## Sources",
        "",
        "| source | checkout (commit, subject) | patches | build (s) | "
        "MNN SME2 kernels in the build | SME2 .S files | their sha256 | "
        "CPU backend reads the vector length |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for name, src in result["sources"].items():
        reads = src["cpu_backend_vector_length_reads"]
        out.append(
            f"| {name} | {src['commit'][:10]} {src['subject']} | "
            f"{', '.join(src['patches']) or '-'} | {src.get('build_wall_s', '-')} | "
            f"{src.get('sme2_kernels', 'not built here')} | {len(src['sme2_asm_files'])} | "
            f"`{src['sme2_asm_sha256'][:12]}` | "
            f"{'; '.join(reads) if reads else 'nowhere'} |"
        )
    out += [
        "",
        "## Agreement with the same build's NEON path (CPU without SME), per source and vector "
        "length",
        "",
        "Teacher-forced: every device is fed the tokens the same build gave on `qemu-no-sme`, "
        "every step judged (identical / rounding: a near-tie swapped / wrong / crashed), per "
        "prompt.",
        "",
        "| source | device | vector length | identical | rounding | wrong | crashed | "
        "largest logit difference (SDs) | earliest differing step | the engine printed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["agreement"]:
        vl = f"{row['vector_length_bits']} bits" if row["vector_length_bits"] else "no SME"
        drift = row["max_logit_diff_sd"]
        sd = "-" if drift is None or pd.isna(drift) else f"{drift:.3g}"
        first = row["first_top1_difference"]
        step = "-" if first is None or pd.isna(first) else str(int(first))
        out.append(
            f"| {row['source']} | {row['device']} | {vl} | {row['identical']}/{row['prompts']} | "
            f"{row['rounding']}/{row['prompts']} | {row['wrong']}/{row['prompts']} | "
            f"{row['crashed']}/{row['prompts']} | {sd} | {step} | {row['engine_line']} |"
        )
    out += [
        "",
        "## Which SME2 kernels ran (QEMU's executed blocks in the engine's libraries)",
        "",
        "| source | device | phase | engine blocks | SME2 kernel blocks | top SME2 kernels |",
        "|---|---|---|---:|---:|---|",
    ]
    for row in result["kernels"]:
        out.append(
            f"| {row['source']} | {row['device']} | {row['phase']} | {row['engine_blocks']} | "
            f"{row['sme2_blocks']} | {', '.join(row['sme2_kernels_top'])} |"
        )
    out += [
        "",
        "## What the engines printed before their CPU line (llm_bench's stdout, raw records)",
        "",
        "| source | device | printed |",
        "|---|---|---|",
        *(
            f"| {row['source']} | {row['device']} | {'; '.join(row['printed'])} |"
            for row in result["printed"]
        ),
    ]
    out += [
        "",
        "## Emulated speed (QEMU on this x86 host: recorded, never judged)",
        "",
        "Median tok/s of the benchmark's repetitions under QEMU; an emulated CPU's speed says "
        "nothing of a real one's.",
        "",
        "| source | device | phase | median tok/s | repetitions |",
        "|---|---|---|---:|---:|",
    ]
    for row in result["emulated_speed"]:
        out.append(
            f"| {row['source']} | {row['device']} | {row['phase']} | {row['median_tps']:.1f} | "
            f"{row['count']} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = workflow_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--static",
        type=key_value,
        action="append",
        default=[],
        help="NAME=CHECKOUT: a source read, not built or run (its SME2 assembly compared)",
    )
    args = parser.parse_args(argv)
    sources = dict(args.source)
    workdir = workdir_of(args)
    config_path = workdir / "mnn-vector-length.yaml"
    config_path.write_text(yaml.safe_dump(derived_config(sources, dict(args.kleidiai))))
    run = snakemake(workdir, str(config_path), None, args.cores)
    config = yaml.safe_load(config_path.read_text())
    built = {name: e for name, e in engines(workdir).items() if name in config["engines"]}
    facts = {}
    for name in built:
        record = json.loads(
            (workdir / f"results/engines/{built[name]['key']}/build.json").read_text()
        )
        facts[name] = {
            **source_facts(record["source"]),
            "sme2_kernels": built[name]["sme2_kernels"],
            "key": built[name]["key"],
            "build_wall_s": built[name]["build_wall_s"],
        }
    for name, path in args.static:
        head = Path(path).resolve()
        commit = git_out(head, "rev-parse", "HEAD")
        facts[name] = {**source_facts({"path": str(head), "commit": commit}), "static": True}
    result = {
        "workflow_s_this_invocation": run["seconds"],
        "sources": facts,
        "agreement": agreement(workdir).to_dict(orient="records"),
        "kernels": kernels_ran(workdir).to_dict(orient="records"),
        "emulated_speed": emulated_speed(workdir).to_dict(orient="records"),
        "printed": printed_before_the_device_line(workdir),
    }
    lines = markdown({**result, "measured": measured_record()})
    write_results("mnn_vector_length", result, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
