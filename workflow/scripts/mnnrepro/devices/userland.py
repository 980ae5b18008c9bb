"""The emulated device's userland: Debian's `qemu-user` package from the unstable suite (11.x
emulates SME2; bookworm's 7.2 does not), the arm64 Debian packages of a Python 3.11, and the
aarch64 wheels of `mnn` and `numpy`, every one an explicit, pinned fetch, unpacked under
resources/emulation/ (never installed system-wide). When a pinned package has left the
archive, its URL answers 404: take the same version from snapshot.debian.org (or pin the
newer one from the suite's Packages index) and update `toolchains.emulation`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mnnrepro.fetch import FetchError, download, pin_urls
from mnnrepro.unpack import extract_deb, extract_zip_into

# the one file of qemu-user the emulated device runs (the package holds 40 static binaries,
# one per guest architecture: 462 MB for 11.1.3)
QEMU_BINARY = "usr/bin/qemu-aarch64"


def pip_download_wheels(wheels: list[dict], dest: Path) -> list[Path]:
    """aarch64 wheels through pip's own index client, in hash-checking mode."""
    dest.mkdir(parents=True, exist_ok=True)
    requirements = dest / "requirements.txt"
    requirements.write_text(
        "".join(f"{w['name']}=={w['version']} --hash=sha256:{w['sha256']}\n" for w in wheels)
    )
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        "manylinux_2_28_aarch64",
        "--platform",
        "manylinux2014_aarch64",
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
        "--abi",
        "cp311",
        "--require-hashes",
        "-r",
        str(requirements),
        "-d",
        str(dest),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise FetchError(f"pip download of the aarch64 wheels failed: {proc.stderr[-2000:]}")
    found = []
    for w in wheels:
        match = [
            p
            for p in dest.glob(f"{w['name']}-{w['version']}-*.whl")
            if hashlib.sha256(p.read_bytes()).hexdigest() == w["sha256"]
        ]
        if not match:
            raise FetchError(f"no wheel of {w['name']}=={w['version']} with the pinned sha256")
        found.append(match[0])
    return found


def provide_userland(pins: dict, root: str | os.PathLike) -> dict:
    """Fetch and unpack QEMU, the arm64 packages and the wheels; returns the receipt."""
    root = Path(root)
    downloads = root / "downloads"
    staging = Path(tempfile.mkdtemp(prefix=".userland-", dir=root))
    try:
        debs = []
        for pkg in [pins["qemu"], *pins["arm64_packages"]]:
            urls = [u.replace("+", "%2B") for u in pin_urls(pkg)]  # the pool refuses '+'
            debs.append(download(urls, downloads / Path(pkg["url"]).name, pkg["sha256"]))
        extract_deb(debs[0], staging / "qemu", only=(QEMU_BINARY,))
        for deb in debs[1:]:
            extract_deb(deb, staging / "sysroot")
        for wheel in pip_download_wheels(pins["wheels"], downloads / "wheels"):
            extract_zip_into(wheel, staging / "site")
        for name in ("qemu", "sysroot", "site"):
            if (root / name).exists():
                shutil.rmtree(root / name)
            os.replace(staging / name, root / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    receipt = {
        "qemu": str((root / "qemu" / QEMU_BINARY).resolve()),
        "sysroot": str((root / "sysroot").resolve()),
        "python": str((root / "sysroot/usr/bin/python3.11").resolve()),
        "site": str((root / "site").resolve()),
        "pins": pins,
    }
    version = subprocess.run(
        [receipt["qemu"], "--version"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    receipt["qemu_version"] = version[0] if version else ""
    return receipt
