"""An emulated arm64 Linux device: QEMU user mode (SME2-capable) and a minimal arm64 userland.

Everything is an explicit, pinned fetch: Debian's `qemu-user` package from the unstable suite
(11.x emulates SME2; bookworm's 7.2 does not), the arm64 Debian packages of a Python 3.11,
and the aarch64 wheels of `mnn` and `numpy`. Packages are unpacked into
resources/emulation/ (never installed system-wide) by a pure-Python .deb reader that refuses
path traversal and links that leave the directory. When a pinned package has left the
archive, its URL answers 404: take the same version from snapshot.debian.org (or pin the
newer one from the suite's Packages index) and update `toolchains.emulation`.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from mnnrepro.device import LocalDevice, run_process
from mnnrepro.fetch import FetchError, download

log = logging.getLogger(__name__)
AT_HWCAP2 = 26
HWCAP2_SME2 = 1 << 37  # arch/arm64/include/uapi/asm/hwcap.h


# ---- .deb files ------------------------------------------------------------------------------


def ar_members(data: bytes) -> dict[str, bytes]:
    if not data.startswith(b"!<arch>\n"):
        raise FetchError("not a Debian package (no ar header)")
    members, pos = {}, 8
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        members[name] = data[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size % 2)
    return members


def extract_deb(deb: str | os.PathLike, dest: str | os.PathLike) -> list[str]:
    """Unpack a .deb's data.tar.* into dest; every member is checked before anything is written.

    Absolute symbolic links are re-rooted inside dest (a sysroot's `/etc/x` is dest/etc/x);
    a link that would still leave dest is refused.
    """
    dest = Path(dest).resolve()
    members = ar_members(Path(deb).read_bytes())
    name = next((n for n in members if n.startswith("data.tar")), None)
    if name is None:
        raise FetchError(f"{deb}: no data.tar member")
    with tarfile.open(fileobj=io.BytesIO(members[name]), mode="r:*") as tar:
        infos = tar.getmembers()
        for info in infos:
            path = PurePosixPath(info.name)
            if path.is_absolute() or ".." in path.parts:
                raise FetchError(f"{deb}: unsafe member {info.name!r}")
            if info.issym() and info.linkname.startswith("/"):
                # a sysroot's absolute link means "inside this root": re-root it, relative
                info.linkname = os.path.relpath(
                    info.linkname.lstrip("/") or ".", str(path.parent) or "."
                )
            if info.issym() or info.islnk():
                base = dest / path.parent if info.issym() else dest
                target = Path(os.path.normpath(base / info.linkname))
                if info.linkname.startswith("/") or not (target == dest or dest in target.parents):
                    raise FetchError(
                        f"{deb}: link {info.name!r} -> {info.linkname!r} leaves "
                        "the userland directory"
                    )
            elif not (info.isfile() or info.isdir()):
                raise FetchError(f"{deb}: {info.name!r} is not a file, directory or link")
        dest.mkdir(parents=True, exist_ok=True)
        tar.extractall(dest, members=infos, filter="tar")
    return [i.name for i in infos if i.isfile()]


# ---- the userland ----------------------------------------------------------------------------


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
            url = pkg["url"].replace("+", "%2B")  # the archive refuses a literal '+'
            debs.append(download(url, downloads / Path(pkg["url"]).name, pkg["sha256"]))
        extract_deb(debs[0], staging / "qemu")
        for deb in debs[1:]:
            extract_deb(deb, staging / "sysroot")
        for wheel in pip_download_wheels(pins["wheels"], downloads / "wheels"):
            with zipfile.ZipFile(wheel) as zf:
                for name in zf.namelist():
                    if name.startswith("/") or ".." in PurePosixPath(name).parts:
                        raise FetchError(f"{wheel}: unsafe member {name!r}")
                zf.extractall(staging / "site")
        for name in ("qemu", "sysroot", "site"):
            if (root / name).exists():
                shutil.rmtree(root / name)
            os.replace(staging / name, root / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    receipt = {
        "qemu": str((root / "qemu/usr/bin/qemu-aarch64").resolve()),
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


# ---- the device ------------------------------------------------------------------------------


def vector_length_bits(cpu: str) -> int | None:
    for part in cpu.split(","):
        key, _, value = part.partition("=")
        if key == "sme-default-vector-length" and value.isdigit():
            return int(value) * 8
    return None


class QemuDevice(LocalDevice):
    """arm64 Linux under QEMU user mode, on this host's file system (so staging, fetching and
    verifying are the local device's); its timings are recorded but never judged."""

    kind = "qemu"
    emulated = True

    def __init__(self, name: str, spec: dict):
        receipt_path = spec.get("userland", "resources/emulation/userland.json")
        try:
            self.userland = json.loads(Path(receipt_path).read_text())
        except OSError as err:
            raise RuntimeError(
                f"device {name}: no emulated userland at {receipt_path}; it is "
                "made by the rule fetch_emulation_userland"
            ) from err
        super().__init__(name, python=self.userland["python"])
        self.cpu = spec.get("cpu", "max")

    def run(self, argv, timeout, env=None):
        qemu = [self.userland["qemu"], "-cpu", self.cpu, "-L", self.userland["sysroot"]]
        guest_env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONPATH": self.userland["site"],
            **(env or {}),
        }
        return run_process(argv, [*qemu, *argv], timeout, self.workdir, guest_env)

    def facts(self):
        probe = (
            "import ctypes; libc = ctypes.CDLL(None); libc.getauxval.restype = "
            f"ctypes.c_ulong; print(libc.getauxval({AT_HWCAP2}))"
        )
        out = self.run([self.python(), "-c", probe], timeout=120)
        hwcap2 = int(out.stdout.strip()) if out.ok and out.stdout.strip().isdigit() else None
        return {
            "device": self.name,
            "kind": self.kind,
            "emulated": True,
            "cpu_model": f"QEMU {self.cpu}",
            "cpu": self.cpu,
            "sme_vector_length_bits": vector_length_bits(self.cpu),
            "hwcap2": hwcap2,
            "sme2": bool(hwcap2 and hwcap2 & HWCAP2_SME2),
            "cpu_features": ["sme2"] if hwcap2 and hwcap2 & HWCAP2_SME2 else [],
            "cpu_count": os.cpu_count(),
            "os": "Linux (QEMU user mode)",
            "qemu": self.userland.get("qemu_version", ""),
            "thermal_c": {},
        }


# ---- cross-device checks -------------------------------------------------------------------


def agreement_table(
    greedy: dict[str, dict],
    facts: dict[str, dict],
    reference: str,
    model: str,
    near_tie_sd: float = 0.25,
):
    """Greedy tokens of every device vs the reference device, per variant and prompt.

    With a reference without SME2 this is both checks of the emulated device: the fallback
    (a CPU with `sme=off` must agree) and the vector-length sweep (which SME vector lengths
    the SME2 kernels compute correctly at). Each divergence is judged by the correctness
    gate's near-tie rule: rounding, or a wrong answer.
    """
    import pandas as pd

    from mnnrepro.correctness import compare_answer

    rows = []
    for device in sorted(greedy):
        for variant, payload in sorted(greedy[device].items()):
            ref = {a["prompt"]: a for a in greedy[reference][variant]["answers"]}
            for answer in payload["answers"]:
                judged = compare_answer(ref.get(answer["prompt"]), answer, near_tie_sd)
                fact = facts[device]
                rows.append(
                    {
                        "model": model,
                        "device": device,
                        "reference": reference,
                        "emulated": fact.get("emulated", False),
                        "cpu": fact.get("cpu", "host"),
                        "sme_vector_length_bits": fact.get("sme_vector_length_bits"),
                        "sme2": fact.get("sme2"),
                        "variant": variant,
                        "env": " ".join(
                            f"{k}={v}" for k, v in sorted(payload.get("env", {}).items())
                        ),
                        "prompt": answer["prompt"],
                        "tokens": judged["tokens"],
                        "agree": judged["agree"],
                        "first_divergence": judged["first_divergence"],
                        "identical": judged["first_divergence"] is None,
                        "judged": judged["kind"],
                        "reason": judged["reason"],
                        "crashed": answer.get("crashed", ""),
                        "engine_line": payload["engine"].get("device_supports", ""),
                        "cpu_target": payload["engine"].get("cpu_target", ""),
                    }
                )
    return pd.DataFrame(rows)
