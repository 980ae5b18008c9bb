"""sha256 of files and directories, and manifests that downstream rules depend on."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_table(root: str | os.PathLike) -> list[dict]:
    """Every regular file below root: relative path, size, sha256 (sorted by path)."""
    root = Path(root)
    rows = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rows.append(
            {
                "path": path.relative_to(root).as_posix(),
                "size": path.stat().st_size,
                "sha256": sha256_file(path),
            }
        )
    return rows


def write_json(path: str | os.PathLike, payload) -> None:
    """Write JSON atomically: a reader never sees a half-written file under the final name."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part-{os.getpid()}")
    tmp.write_text(
        json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    os.replace(tmp, path)


def code_digest(package_dir: str | os.PathLike, patterns=("*.py",)) -> str:
    """sha256 over a package's sources (names and contents; Python files by default)."""
    digest = hashlib.sha256()
    paths = {p for pattern in patterns for p in Path(package_dir).glob(pattern)}
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def read_json(path: str | os.PathLike):
    return json.loads(Path(path).read_text(encoding="utf-8"))
