"""An engine's source through the workflow's rules, on a local repository of the stand-in
MNN (tests/data/fake-mnn) with seven commits, one of which stops compiling the SME2 kernels:
builds of several sources and a patch side by side in one experiment, and bisection
(mnnrepro/plan/bisect.py: `git bisect` over a mirror, each step a real build of that commit
for this host by the fetch and build rules, the predicate reading build.json)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import run_snakemake

pytestmark = pytest.mark.slow

PLANTED = "Build the SME2 kernels only on request"  # the change that drops them
# build.json's SME2-named functions of the engine's libraries: a kernel where the compiler
# can emit SME instructions (arm64), a name without them here (x86); the planted change drops it
KERNEL = "MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16"
BAD_IF = f'"{KERNEL}" not in data["sme2"]["sme2_kernels"] + data["sme2"]["sme2_named_without_sme"]'


CONFIG = {
    "experiment": "bisect",
    "engines": {
        "fake": {
            "build": {
                "platform": "host",
                "flags": {
                    "MNN_BUILD_LLM": True,
                    "MNN_LOW_MEMORY": True,
                    "MNN_SUPPORT_TRANSFORMER_FUSE": True,
                    "MNN_KLEIDIAI": False,
                    "MNN_SME2": True,
                },
            }
        }
    },
    "models": {"synth-tiny": {"synthetic": {"shape": "tiny", "seed": 0}}},
    "devices": {"host": {"local": {}}},
    "variants": {
        "a": {"engine": "fake", "runtime": {"thread_num": 1}},
        "b": {"engine": "fake", "runtime": {"thread_num": 2}},
    },
    "bench": {"prompt_tokens": 8, "generate_tokens": 4, "repetitions": 2},
    "correctness": {"prompts": ["hello"], "max_new_tokens": 4},
    "comparison": {"baseline": "a", "treatment": "b"},
}


def git(cwd, *args):
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def history(root, tmp_path):
    """good (first commit) .. bad (last): the planted commit is the 5th of 7."""
    repo = tmp_path / "fake-mnn"
    shutil.copytree(root / "tests" / "data" / "fake-mnn", repo)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "test")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "Import")
    commits = [git(repo, "rev-parse", "HEAD")]
    for i in range(1, 7):
        if i == 4:
            cmake = repo / "CMakeLists.txt"
            text = cmake.read_text().replace(
                "if(MNN_SME2)\n", "if(MNN_SME2 AND MNN_SME2_KERNELS)\n"
            )
            assert text != cmake.read_text()
            cmake.write_text(text)
            message = PLANTED
        else:
            with (repo / "mnn_core.c").open("a") as fh:
                fh.write(f"/* change {i} */\n")
            message = f"Change {i}"
        git(repo, "commit", "-qam", message)
        commits.append(git(repo, "rev-parse", "HEAD"))
    return repo, commits


def test_bisection_finds_the_commit_that_dropped_the_sme2_kernels(root, tmp_path, history):
    repo, commits = history
    config = {**CONFIG, "mnn": {"source": {"path": str(repo)}}}  # a local checkout
    work = tmp_path / "work"
    work.mkdir()
    (work / "bisect.yaml").write_text(yaml.safe_dump(config))
    command = [
        sys.executable,
        "-m",
        "mnnrepro.plan.bisect",
        "bisect.yaml",
        "--engine",
        "fake",
        "--good",
        commits[0],
        "--bad",
        commits[-1],
        "--cores",
        "2",
        "--target",
        "results/engines/{engine_key}/build.json",
        "--bad-if",
        BAD_IF,
    ]
    scripts = str(root / "workflow" / "scripts")
    env = {**os.environ, "PYTHONPATH": scripts}
    proc = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"first bad commit: {commits[4]} {PLANTED}" in proc.stdout
    result = json.loads((work / "results" / "bisect" / "fake.json").read_text())
    assert result["first_bad_commit"] == {"commit": commits[4], "subject": PLANTED}
    assert result["good"] == commits[0] and result["bad"] == commits[-1]
    steps = result["steps"]
    assert 2 <= len(steps) <= 3  # log2 of the 6 commits in between, as git bisect walks
    for step in steps:  # the evidence: each commit tried, built by the workflow, judged
        expected = "bad" if commits.index(step["commit"]) >= 4 else "good"
        assert step["verdict"] == expected and step["returncode"] == 0
        build = json.loads((work / step["target"]).read_text())
        assert build["source"]["commit"] == step["commit"]
        assert step["bad_if"] == (expected == "bad") and len(step["target_sha256"]) == 64
    # the user's repository is untouched: no bisection state, its branch where it was
    assert git(repo, "rev-parse", "HEAD") == commits[-1]
    assert not (repo / ".git" / "BISECT_LOG").exists()


def test_engines_of_several_sources_and_a_patch_build_side_by_side(root, tmp_path, history):
    """One experiment, three builds of the stand-in MNN through the workflow's rules: the
    tree's own source (the last commit: the SME2 kernels gone), an engine at another commit
    (its own `source`: before the change) and one with its own `patches` (the fix, measured
    before it exists upstream). Each is keyed by what it was built from, and each runs its own
    test suite (MNN_BUILD_TEST) through rule run_engine_tests."""
    from mnnrepro.plan.plan import plan_of

    repo, commits = history
    git(repo, "config", "uploadpack.allowAnySHA1InWant", "true")  # fetched by commit
    fix = tmp_path / "restore-sme2.patch"
    fix.write_text(git(repo, "diff", commits[4], f"{commits[4]}~1") + "\n")
    flags = yaml.safe_load(yaml.safe_dump(CONFIG["engines"]["fake"]["build"]["flags"]))
    flags["MNN_BUILD_TEST"] = True
    config = {
        **CONFIG,
        "engine_tests": {"tests": ["op/matmul", "op/lowMemory"]},  # the stand-in's suite
        "mnn": {"source": {"git": str(repo), "commit": commits[-1]}},
        "engines": {
            "after": {"build": {"platform": "host", "flags": flags}},
            "before": {
                "build": {
                    "platform": "host",
                    "flags": flags,
                    "source": {"git": str(repo), "commit": commits[0]},
                }
            },
            "patched": {
                "build": {
                    "platform": "host",
                    "flags": flags,
                    "patches": [{"path": str(fix), "sha256": sha256(fix)}],
                }
            },
        },
        "variants": {
            name: {"engine": name, "runtime": {"thread_num": 1}}
            for name in ("after", "before", "patched")
        },
        "comparison": {
            "baseline": "after",
            "treatment": "patched",
            "also": [{"baseline": "after", "treatment": "before"}],
        },
    }
    work = tmp_path / "work"
    work.mkdir()
    path = work / "sources.yaml"
    path.write_text(yaml.safe_dump(config))
    plan = plan_of(config, path, root)
    keys = plan.engine_keys
    assert len(set(plan.sources.engine_receipts.values())) == 3  # three trees, three fetches
    targets = [f"results/engines/{keys[e]}/build.json" for e in ("after", "before", "patched")]
    targets.append("results/bisect/engine_tests.csv")
    run_snakemake(
        work, *targets, "--snakefile", root / "Snakefile", "--cores", "2", "--configfile", path
    )
    builds = {
        e: json.loads((work / f"results/engines/{keys[e]}/build.json").read_text())
        for e in ("after", "before", "patched")
    }
    assert builds["after"]["source"]["commit"] == builds["patched"]["source"]["commit"]
    assert builds["before"]["source"]["commit"] == commits[0]
    assert builds["patched"]["source"]["patches"][0]["sha256"] == sha256(fix)

    def has_kernel(build):
        return KERNEL in build["sme2"]["sme2_kernels"] + build["sme2"]["sme2_named_without_sme"]

    assert not has_kernel(builds["after"])
    assert has_kernel(builds["before"]) and has_kernel(builds["patched"])
    tests = pd.read_csv(work / "results/bisect/engine_tests.csv")
    assert sorted(set(tests["engine"])) == ["after", "before", "patched"]
    assert set(tests["device"]) == {"host"} and set(tests["outcome"]) == {"pass"}
    assert set(tests["test"]) == {"op/matmul", "op/lowMemory"}


def sha256(path):
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
