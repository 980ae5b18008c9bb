"""MNN engines: what exactly runs, recorded as engine.json."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from mnnrepro.errors import ReproError


class EngineError(ReproError, RuntimeError):
    pass


@dataclass(frozen=True)
class BuildJob:
    """One from-source engine build, as the build rule hands it to its kind (engines/base)."""

    engine: str  # its name: config key `engines.<engine>`
    source: dict  # the fetched tree's receipt (toolchain/source)
    spec: dict  # its kind's section of `engines.<engine>` (platform, flags, expect)
    build_dir: str
    engine_dir: str  # where the built programs are collected
    log_file: TextIO  # the rule's log
    ndk: dict | None = None  # the NDK's receipt, for an Android build
    jobs: int = 2


def settings_read_by(paths) -> list[str]:
    """The MNN settings of SME2 (config.SME2_SETTINGS) an engine's binaries read: those whose
    config.json key is among their bytes (an MNN without the setting has no such key). A
    compiler may build a longer literal from 16-byte immediates (the PyPI wheel's x86-64
    library holds `cpu_sme2_neon_di` apart from the rest), so the first 16 bytes are sought."""
    # pulls jsonschema: a build's settings scan only
    from mnnrepro.config import SME2_SETTINGS

    found = set()
    for path in paths:
        data = Path(path).read_bytes()
        found |= {key for key in SME2_SETTINGS if key.encode()[:16] in data}
    return sorted(found)


PLATFORM_COMPILERS = {"host": "c++", "linux-arm64": "aarch64-linux-gnu-g++"}


def compiler_version(
    platform: str, compilers: dict = PLATFORM_COMPILERS, flags: dict | None = None
) -> str:
    """First line of `<compiler> --version` for a platform built with the machine's compiler
    (android-arm64 is defined by the pinned NDK instead): the build's CMAKE_CXX_COMPILER flag
    where it names one, else the platform's; empty where there is none."""
    compiler = compilers.get(platform)
    if platform == "host":
        compiler = os.environ.get("CXX") or compiler
    compiler = str((flags or {}).get("CMAKE_CXX_COMPILER") or compiler or "")
    if not compiler or not shutil.which(compiler):
        return ""
    proc = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False)
    return (proc.stdout.splitlines() or [""])[0].strip()


def source_identity(source: dict, kleidiai: dict | None, patches: list | None = None) -> dict:
    """What defines the MNN tree a build uses: the pinned source, its patches (sha256), and
    for a local checkout the commit it is at now (a checkout moved to another commit is
    another source)."""
    identity = {"source": source, "kleidiai": kleidiai or {}}
    if patches:
        identity["patches"] = [p["sha256"] for p in patches]
    if "path" in source:
        proc = subprocess.run(
            ["git", "-C", str(source["path"]), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
        identity["commit"] = proc.stdout.strip() if proc.returncode == 0 else ""
    return identity


def short_digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def engine_key(
    name: str,
    spec: dict,
    section: str | None = None,
    compilers: dict = PLATFORM_COMPILERS,
    source: dict | None = None,
    ndk_pin: dict | None = None,
) -> str:
    """`<name>-<digest>`: the directory name of an engine's outputs.

    The digest covers what defines the engine: for a build (`section`, the key of its
    definition in the engine's config entry; `compilers`: its kind's compiler per platform)
    its platform, -D flags, targets and expectations, the source (commit), KleidiAI pin
    (`source`: the tree, EngineKind.tree_of), and the toolchain (`ndk_pin`: `toolchains.ndk`,
    or the compiler's version); for a prebuilt
    engine (no section) its pin. Two configs that build differently (e.g. sme2-on for
    android-arm64 and for the host) never share, and never overwrite, each other's outputs;
    the same definition always maps to the same directory.
    """
    if section is None:
        return f"{name}-{short_digest(spec)}"
    build, source = spec[section], source or {}
    material = {
        section: {
            "platform": build["platform"],
            "flags": {k: flag_text(v) for k, v in sorted(build.get("flags", {}).items())},
            "targets": build.get("targets"),
            "expect": build.get("expect", {}),
        },
        "source": source_identity(
            source.get("source", {}), source.get("kleidiai"), source.get("patches")
        ),
        "toolchain": (
            ndk_pin or {}
            if build["platform"] == "android-arm64"
            else compiler_version(build["platform"], compilers, build.get("flags"))
        ),
    }
    return f"{name}-{short_digest(material)}"


def source_key(tree: dict) -> str:
    """The directory key of a source tree's receipt (the `mnn` or `llamacpp` section, or an
    engine's own tree): its source, its KleidiAI pin and its patches (their sha256) where it
    has any."""
    material = {"source": tree.get("source", {}), "kleidiai": tree.get("kleidiai", {})}
    if tree.get("patches"):  # absent and empty: the key every unpatched tree always had
        material["patches"] = [p["sha256"] for p in tree["patches"]]
    return short_digest(material)


def flag_text(value) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def flag_on(value) -> bool:
    """Whether CMake's if() reads a flag's value as true: ON, YES, TRUE, Y or a non-zero
    number, in any case."""
    text = flag_text(value).upper()
    if text in {"ON", "YES", "TRUE", "Y"}:
        return True
    try:
        return float(text) != 0
    except ValueError:
        return False


def receipt_of(section: str, tree: dict) -> str:
    """resources/<section>/<the tree's key>/source.json: what fetch_source writes."""
    return f"resources/{section}/{source_key(tree)}/source.json"
