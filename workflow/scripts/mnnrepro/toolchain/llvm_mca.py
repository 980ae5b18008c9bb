"""LLVM's llvm-mca and llvm-mc, the release whose scheduling models know the phone's core: Debian
unstable's llvm-23 and the libraries it loads, every package an explicit, pinned fetch
(config/cost_model.yaml's `llvm_mca.packages`), unpacked under one folder and run by the
packages' own loader (never installed system-wide; this host's C library is older than theirs).
Debian bookworm's LLVM 19 has no C1 model, and PyPI has no llvm-mca.

When a pinned package has left Debian's pool, its URL answers 404 and its snapshot.debian.org
mirror (by the file's sha1) still has it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.fetch import download, pin_urls
from mnnrepro.unpack import extract_deb

LOADER = "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
LIBRARY_DIRS = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu")


class LlvmMcaError(ReproError, RuntimeError):
    pass


def provide_llvm_mca(pins: dict, root: str | os.PathLike) -> dict:
    """Fetch (verified by sha256) and unpack the pinned packages under root/tree; returns the
    receipt LlvmTools.of reads."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".llvm-mca-", dir=root))
    try:
        for pkg in pins["packages"]:
            urls = [u.replace("+", "%2B") for u in pin_urls(pkg)]  # the pool refuses '+'
            deb = download(urls, root / "downloads" / Path(pkg["url"]).name, pkg["sha256"])
            extract_deb(deb, staging)
        if (root / "tree").exists():
            shutil.rmtree(root / "tree")
        os.replace(staging, root / "tree")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    tree = (root / "tree").resolve()
    receipt = {"tree": str(tree), "bin": pins["bin"], "pins": pins}
    receipt["version"] = LlvmTools.of(receipt).version()
    return receipt


@dataclass(frozen=True)
class LlvmTools:
    """The unpacked tools, run through the packages' loader and libraries."""

    tree: Path
    bin: str  # the tools' folder in the tree (usr/lib/llvm-23/bin)

    @classmethod
    def of(cls, receipt: dict) -> LlvmTools:
        return cls(Path(receipt["tree"]), receipt["bin"])

    def argv(self, tool: str, *args: str) -> list[str]:
        libraries = [str(self.tree / d) for d in LIBRARY_DIRS]
        libraries.append(str(self.tree / Path(self.bin).parent / "lib"))
        loader = str(self.tree / LOADER)
        return [
            loader,
            "--library-path",
            ":".join(libraries),
            str(self.tree / self.bin / tool),
            *args,
        ]

    def run(self, tool: str, args: list[str], text: str, timeout: float = 600) -> str:
        """A tool's standard output for `text` on its standard input; a failure is one error
        naming the tool and its last words."""
        try:
            done = subprocess.run(
                self.argv(tool, *args),
                input=text,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise LlvmMcaError(f"{tool} ({self.tree}): {error}") from None
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-3:]
            raise LlvmMcaError(f"{tool} exited {done.returncode}: {' | '.join(tail)}")
        return done.stdout

    def version(self) -> str:
        out = self.run("llvm-mca", ["--version"], "")
        return next((line.strip() for line in out.splitlines() if "version" in line), "")
