"""What ran: the workflow's git state and the versions of the software that matter."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata

PACKAGES = (
    "mnn-sme2-repro",
    "snakemake",
    "mnn",
    "llmexport",
    "torch",
    "transformers",
    "pandas",
    "numpy",
    "scipy",
    "altair",
    "vl-convert-python",
    "jsonschema",
)


def git_state(repo: str) -> dict:
    def git(*args):
        return subprocess.run(
            ["git", "-C", repo, *args], capture_output=True, text=True, check=False
        )

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        return {"commit": None, "dirty": None, "note": "not a git checkout"}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def tool_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
