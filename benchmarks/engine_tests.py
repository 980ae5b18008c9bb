"""MNN's own tests against the correctness gate, on every emulated CPU.

Usage:
    python benchmarks/engine_tests.py --source mnn=/src/MNN-3.6.1 \
        --kleidiai v1.16.0=file:///src/kleidiai-v1.16.0.tar.gz --workdir DIR [--cores 2]

It runs config/emulated-paper.yaml's two MNN 3.6.1 builds (SME2 OFF and ON, cross-built for
linux-arm64, with MNN_BUILD_TEST) and the ON build once more with
patches/mnn-sme2-vector-length.patch, through the workflow, on QEMU 11 without SME and with
SME2 at 128 ... 2048 bits: the engines' own tests (rule run_engine_tests, `engine_tests`) and
the correctness gate (teacher-forced against each build's own answers on the CPU without SME,
the emulation check), both for every build and CPU. No benchmark runs: emulated timings are
never judged. `--source` gives a local checkout for the tree (this network cannot reach
GitHub), `--kleidiai` a mirror of the pinned tag's archive (its md5 is still checked).

It writes benchmarks/results/engine_tests.{json,md}: per build and CPU, every named test's
outcome beside the gate's verdict on the same CPU, and where they disagree.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from mnn_vector_length import workdir_of, workflow_parser  # noqa: E402
from provenance import measured_record, write_results  # noqa: E402
from real_mnn import snakemake  # noqa: E402

EXPERIMENT = "engine-tests"
MODEL = "synth-tiny"
PATCH = {
    "path": str(ROOT / "patches/mnn-sme2-vector-length.patch"),
    "sha256": "ea961bfe59aac9a0ea4e277587bd578c6d155f45eba9f0f59d8cc48438d76513",
}


def derived_config(mnn: str, mirrors: dict[str, str]) -> dict:
    """config/emulated-paper.yaml: its two MNN builds with their test suite and the patched ON
    build, without the control engine (its tests do not reach KleidiAI's kernels) and without
    kernel attribution (what ran is mnn_vector_length.md's)."""
    config = yaml.safe_load((ROOT / "config/emulated-paper.yaml").read_text())
    config["experiment"] = EXPERIMENT
    config["mnn"]["source"] = {"path": str(Path(mnn).resolve())}
    pin = config["mnn"]["kleidiai"]
    pin["url"] = mirrors.get(pin["version"], pin["url"])
    for name in ("sme2-off", "sme2-on"):
        config["engines"][name]["build"]["flags"]["MNN_BUILD_TEST"] = True
    patched = copy.deepcopy(config["engines"]["sme2-on"])
    patched["build"]["patches"] = [PATCH]
    config["engines"] = {
        "sme2-off": config["engines"]["sme2-off"],
        "sme2-on": config["engines"]["sme2-on"],
        "sme2-on-patched": patched,
    }
    runtime = {"thread_num": 1, "precision": "low"}
    config["variants"] = {name: {"engine": name, "runtime": runtime} for name in config["engines"]}
    config["comparison"]["also"] = [{"baseline": "sme2-off", "treatment": "sme2-on-patched"}]
    config["attribution"] = {"enabled": False}
    return config


def targets(config: dict) -> list[str]:
    """The engines' tests, the gate's emulation table and every device's validity checks."""
    out = f"results/{EXPERIMENT}"
    return [
        f"{out}/engine_tests.csv",
        f"{out}/emulation/{MODEL}.csv",
        *(f"{out}/validity/{device}/{MODEL}.json" for device in config["devices"]),
    ]


def tables(workdir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """engine_tests.csv and the gate's emulation table, as the workflow wrote them."""
    out = workdir / f"results/{EXPERIMENT}"
    tests = pd.read_csv(out / "engine_tests.csv", keep_default_na=False)
    gate = pd.read_csv(out / f"emulation/{MODEL}.csv")
    return tests, gate


# the emulated CPUs, in the order of their vector length
CPUS = [f"qemu-{c}" for c in ("no-sme", *(f"sme2-vl{b}" for b in (128, 256, 512, 1024, 2048)))]
CORRECT = {"identical", "equivalent within rounding"}


def test_grid(tests: pd.DataFrame) -> pd.DataFrame:
    """build x test -> each CPU's outcome."""
    grid = tests.pivot_table(
        index=["engine", "test"], columns="device", values="outcome", aggfunc="first"
    )
    return grid.reindex(columns=[c for c in CPUS if c in grid.columns])


def gate_grid(gate: pd.DataFrame) -> pd.DataFrame:
    """build -> each CPU's gate verdicts over its prompts (`3 identical`, ...)."""
    judged = gate.assign(judged=gate["judged"].fillna("-"))
    counted = judged.groupby(["variant", "device"])["judged"].agg(
        lambda s: ", ".join(f"{n} {what}" for what, n in s.value_counts().items())
    )
    grid = counted.unstack()
    return grid.reindex(columns=[c for c in CPUS if c in grid.columns])


def verdicts(tests: pd.DataFrame, gate: pd.DataFrame) -> pd.DataFrame:
    """Per build and CPU: do the engine's tests pass, is the gate's answer correct, and do
    they agree (the variants are named as their engines)."""
    rows = []
    for (engine, device), part in tests.groupby(["engine", "device"]):
        answers = gate[(gate["variant"] == engine) & (gate["device"] == device)]["judged"]
        failed = sorted(part[part["outcome"] != "pass"]["test"])
        gate_ok = bool(len(answers)) and answers.isin(CORRECT).all()
        rows.append(
            {
                "build": engine,
                "cpu": device,
                "tests": "pass" if not failed else "fail: " + ", ".join(failed),
                "gate": "correct" if gate_ok else ", ".join(sorted(set(answers.fillna("-")))),
                "agree": (not failed) == gate_ok,
            }
        )
    return pd.DataFrame(rows)


def markdown(result: dict) -> list[str]:
    measured = result["measured"]
    tests, gate = pd.DataFrame(result["tests"]), pd.DataFrame(result["gate"])
    both = verdicts(tests, gate)
    disagree = both[~both["agree"]]
    return [
        "# MNN's own tests and the correctness gate on emulated SME2 CPUs "
        "(benchmarks/engine_tests.py)",
        "",
        f"Command: `{measured['command']}`; this invocation of the workflow: "
        f"{result['workflow_s_this_invocation']:.0f} s (a rerun in the same directory runs "
        "only what is missing or changed); the builds, from their build.json: "
        + ", ".join(f"{e} {s:.0f} s" for e, s in sorted(result["build_s"].items()))
        + ".",
        "",
        "Builds: MNN 3.6.1 for linux-arm64 with SME2 OFF, ON, and ON with "
        "patches/mnn-sme2-vector-length.patch, each with its test suite (MNN_BUILD_TEST); "
        "QEMU 11 user mode without SME and with SME2 at 128 ... 2048 bits. Each test name a "
        "process of its own (`run_test.out NAME 0 2 1`: CPU, precision low, 1 thread).",
        "",
        "## The engines' own tests (outcome per CPU)",
        "",
        test_grid(tests).to_markdown(),
        "",
        "## The correctness gate on the same CPUs (each build's greedy answers, teacher-forced "
        "against its own on the CPU without SME; 3 prompts)",
        "",
        gate_grid(gate).to_markdown(),
        "",
        "## Side by side",
        "",
        both.to_markdown(index=False),
        "",
        f"They disagree on {len(disagree)} of {len(both)} build x CPU cells"
        + (
            ": " + "; ".join(f"{r.build} on {r.cpu}" for r in disagree.itertuples())
            if len(disagree)
            else "."
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    args = workflow_parser(__doc__.split("\n\n")[0]).parse_args(argv)
    workdir = workdir_of(args)
    config = derived_config(dict(args.source)["mnn"], dict(args.kleidiai))
    config_path = workdir / f"{EXPERIMENT}.yaml"
    config_path.write_text(yaml.safe_dump(config))
    run = snakemake(workdir, str(config_path), None, args.cores, *targets(config))
    tests, gate = tables(workdir)
    builds = [json.loads(p.read_text()) for p in workdir.glob("results/engines/*/build.json")]
    result = {
        "workflow_s_this_invocation": run["seconds"],
        "build_s": {
            b["engine"]: b["build_wall_s"] for b in builds if b["engine"] in config["engines"]
        },
        "tests": tests.drop(columns=["command_line"]).to_dict(orient="records"),
        "gate": gate.to_dict(orient="records"),
    }
    write_results("engine_tests", result, markdown({**result, "measured": measured_record()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
