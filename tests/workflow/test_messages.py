"""Every job message of every shipped config's dry run claims only what its config pins,
checks or computes. A message said "pinned revision, verified hashes" for a model at branch
`master` with no hash pinned, and "paired bootstrap CIs" where the interval is Student t.

Each claim a message makes is read back against the config (CLAIMS); a word of a claim
(pinned, verified, checked, sha256, checksum, bootstrap, CI) outside every known claim fails
too: a new message that names a pin or check must say which, in words this test can hold
against the config."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import copy_repository, design_stats, run_snakemake

from mnnrepro.intervals import interval_name, run_intervals

ROOT = Path(__file__).resolve().parents[2]
# each shipped experiment as a user runs it (an overlay after the config it extends)
SHIPPED = [
    ["config/config.yaml"],
    ["config/paper.yaml"],
    ["config/paper.yaml", "config/paper-export.yaml"],
    ["config/paper.yaml", "config/paper-control.yaml"],
    ["config/paper.yaml", "config/paper-mask.yaml"],
    ["config/paper.yaml", "config/paper-sweep.yaml"],
    ["config/host-sme2.yaml"],
    ["config/emulated-sme2.yaml"],
    ["config/emulated-paper.yaml"],
    ["config/emulated-vision.yaml"],
    ["config/mnn-vector-length.yaml"],
]
CLAIM_WORDS = re.compile(r"pinned|verified|checked|sha256|checksum|bootstrap|\bCI\b", re.I)


def merged(files: list[str]) -> dict:
    from snakemake.utils import update_config

    config: dict = {}
    for name in files:
        update_config(config, yaml.safe_load((ROOT / name).read_text()))
    return config


def models(config: dict) -> dict[str, dict]:
    """model name -> each ModelScope repository it is downloaded from (the MNN export's, the
    original weights')."""
    found = {}
    for name, spec in config.get("models", {}).items():
        source = spec.get("export", {}).get("from") or spec.get("checkpoint") or {}
        found[name] = [s["modelscope"] for s in (spec, source) if "modelscope" in s]
    return found


def trees(config: dict) -> list[dict]:
    """Every source tree the config names: each kind's section and each engine's own."""
    sections = [config[s] for s in ("mnn", "llamacpp") if s in config]
    own = [
        {k: v for k, v in spec.get("build", {}).items() if k in ("source", "kleidiai", "patches")}
        for spec in config.get("engines", {}).values()
    ]
    return sections + [t for t in own if t]


def claim_model(config, message, found):
    name = re.search(r"model (\S+) from ModelScope", message).group(1)
    return [repo for repo in models(config)[name]]


def pinned_revision(config, message, found):
    repos = claim_model(config, message, found)
    return any(
        re.fullmatch(r"[0-9a-f]{40}", r["revision"]) and r["revision"].startswith(found[1])
        for r in repos
    )


def unpinned_revision(config, message, found):
    return any(
        r["revision"] == found[1] and not re.fullmatch(r"[0-9a-f]{40}", r["revision"])
        for r in claim_model(config, message, found)
    )


def hashes_checked(config, message, found):
    return any(
        len(r.get("files_sha256") or {}) == int(found[1])
        for r in claim_model(config, message, found)
    )


def no_hash_checked(config, message, found):
    return any(not r.get("files_sha256") for r in claim_model(config, message, found))


def git_commit(config, message, found):
    return any(
        "git" in t.get("source", {}) and t["source"].get("commit", "").startswith(found[1])
        for t in trees(config)
    )


def local_checkout(config, message, found):
    return any(t.get("source", {}).get("path") == found[1] for t in trees(config))


def kleidiai_pinned(config, message, found):
    return any(
        t.get("kleidiai", {}).get("version") == found[1] and t["kleidiai"].get("md5")
        for t in trees(config)
    )


def sdist_pinned(config, message, found):
    sdist = config.get("llamacpp", {}).get("source", {}).get("sdist", {})
    return sdist.get("version") == found[1] and bool(sdist.get("sha256"))


def patches_pinned(config, message, found):
    return any(
        len(t.get("patches", [])) == int(found[1]) and all(p.get("sha256") for p in t["patches"])
        for t in trees(config)
    )


def ort_pins(config, message, section: str):
    """The pins of `ort_genai.<section>` for the platform the message names."""
    from mnnrepro.config import load_schema

    default = load_schema()["properties"]["ort_genai"]["properties"][section]["default"]
    pins = config.get("ort_genai", {}).get(section) or default
    return pins.get(re.search(r"GenAI for (\S+) \(", message).group(1))


def executorch_pins(config, message) -> list:
    """The pins of `executorch.wheels.<platform>` for the platform the message names."""
    from mnnrepro.config import load_schema

    default = load_schema()["properties"]["executorch"]["properties"]["wheels"]["default"]
    pins = config.get("executorch", {}).get("wheels") or default
    return pins.get(re.search(r"\) for (\S+) \(", message).group(1)) or []


def wheels_pinned(config, message, found):
    if "ExecuTorch" in message:
        pins = executorch_pins(config, message)
    else:
        pins = ort_pins(config, message, "wheels") or []
    return len(pins) == int(found[1]) and all(p.get("sha256") for p in pins)


def aars_pinned(config, message, found):
    pins = ort_pins(config, message, "aars") or {}
    aars = [pins[p] for p in ("onnxruntime", "onnxruntime_genai") if p in pins]
    pinned = [*aars, pins.get("builder", {})]
    return len(aars) == int(found[1]) and all(p.get("sha256") for p in pinned)


def ndk_pinned(config, message, found):
    ndk = config.get("toolchains", {}).get("ndk", {})
    return bool(ndk.get("sha256") and ndk.get("revision"))


def userland_pinned(config, message, found):
    from mnnrepro.config import load_schema

    pins = (
        config.get("toolchains", {}).get("emulation")
        or (load_schema()["properties"]["toolchains"]["properties"]["emulation"]["default"])
    )
    packages = [p for group in pins.values() if isinstance(group, list) for p in group]
    return bool(packages) and all(p.get("sha256") for p in packages)


def interval(config, message, found):
    """The interval the summary computes and names in summary.csv (`interval`): after a run that
    stops on its verdict t at the level calibrated for its looks, after precision on demand t
    with the first look's degrees of freedom."""
    stats = design_stats(**config.get("stats", {}))
    return found[1] == interval_name(run_intervals(stats, config["bench"]["repetitions"]))


# (a claim as a message words it, what in the config makes it true)
CLAIMS = [
    (r"pinned revision ([0-9a-f]{12})", pinned_revision),
    (r"revision '([^']+)', not pinned: a branch or tag moves", unpinned_revision),
    (r"(\d+) file hash\(es\) checked", hashes_checked),
    (r"file hashes recorded, none checked \(no files_sha256\)", no_hash_checked),
    (r"commit ([0-9a-f]{12}), HEAD verified", git_commit),
    (r"the local checkout (\S+): its commit recorded, not pinned", local_checkout),
    (r"KleidiAI (\S+), checksum pinned", kleidiai_pinned),
    (r"sdist (\S+), sha256 pinned", sdist_pinned),
    (r"(\d+) patch\(es\), sha256 pinned", patches_pinned),
    (r"(\d+) wheel\(s\), sha256 pinned", wheels_pinned),
    (r"(\d+) AARs and genai's wheel \(its model builder\), sha256 pinned", aars_pinned),
    (r"an installed NDK of the pinned revision, else the pinned download", ndk_pinned),
    (r"the arm64 userland \(pinned, verified\)", userland_pinned),
    (r"CI: (.+)\) and ", interval),
]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the repository, as a user's clone, with the local MNN checkout some configs
    name (`../MNN`) beside it: an empty directory, all a dry run needs of it."""
    base = tmp_path_factory.mktemp("messages")
    (base / "MNN").mkdir()
    return copy_repository(ROOT, base / "repo")


def messages(files: list[str], checkout: Path) -> list[str]:
    """The job messages of the config's dry run in `checkout`."""
    proc = run_snakemake(checkout, "-n", "--configfile", *files)
    return sorted({m for m in re.findall(r"(?m)^Job \d+: (.*)$", proc.stdout)})


def judged(config: dict, message: str) -> list[str]:
    """What is wrong with one message: each claim the config does not make true, and each
    claim word no known claim accounts for."""
    problems, covered = [], []
    for pattern, holds in CLAIMS:
        for found in re.finditer(pattern, message):
            covered.append(found.span())
            if not holds(config, message, found):
                problems.append(f"claims {found.group(0)!r}, which the config does not make true")
    for word in CLAIM_WORDS.finditer(message):
        if not any(start <= word.start() < end for start, end in covered):
            problems.append(f"says {word.group(0)!r} outside any claim this test can check")
    return problems


@pytest.mark.parametrize("files", SHIPPED, ids=[" + ".join(f) for f in SHIPPED])
def test_no_job_message_claims_a_pin_a_check_or_an_interval_the_run_does_not_have(files, checkout):
    config = merged(files)
    found = messages(files, checkout)
    assert found, "the dry run planned no job"
    wrong = {m: p for m in found if (p := judged(config, m))}
    assert wrong == {}


def test_the_check_fails_a_message_that_claims_more_than_the_config():
    """The messages before this test: a `master` revision with no hash 'pinned, verified', a
    t interval called the bootstrap's."""
    config = merged(["config/paper.yaml"])
    said = "Downloading model qwen3-vl-4b-mnn from ModelScope (pinned revision, verified hashes)"
    assert judged(config, said) == [
        "says 'pinned' outside any claim this test can check",
        "says 'verified' outside any claim this test can check",
    ]
    assert judged(config, "Speedups (CI: paired bootstrap (10000 resamples)) and verdicts")
    ok = "Downloading model qwen3-vl-4b-mnn from ModelScope (revision 'master', not pinned: "
    assert judged(config, ok + "a branch or tag moves)") == []
    assert judged(config, ok.replace("master", "main") + "a branch or tag moves)")


if __name__ == "__main__":  # the messages of one config's dry run here, for a reader
    print("\n".join(messages(sys.argv[1:], ROOT)))
