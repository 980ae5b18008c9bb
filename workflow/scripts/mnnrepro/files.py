"""Shared file I/O of every stage: sha256 of files and trees, atomic JSON, verified reading of
JSON. Pinned downloads are fetch.py's, archive extraction unpack.py's."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from mnnrepro.errors import DataError


def sha256_file(path: str | os.PathLike) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def where_run(path: str | os.PathLike) -> str:
    """`path` as a rule names it: relative to the working directory where it lies inside it,
    so that a checkout copied or moved elsewhere plans the same inputs and reruns nothing;
    absolute where it lies outside (the workflow used from another directory, which stays
    where it is when the results move)."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(absolute)


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


def plain(value):
    """JSON's default for a record type: a read-only Mapping, or a value that keeps what was
    written (`as_written`, e.g. engines.registry's EngineRecord), written as that mapping."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(getattr(value, "as_written", None), Mapping):
        return dict(value.as_written)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_json(path: str | os.PathLike, payload) -> None:
    """Write JSON atomically: a reader never sees a half-written file under the final name."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part-{os.getpid()}")
    tmp.write_text(
        json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, default=plain) + "\n",
        encoding="utf-8",
    )
    os.replace(tmp, path)


def code_digest(package_dir: str | os.PathLike, patterns=("*.py",)) -> str:
    """sha256 over a package's sources, sub-packages included (relative names and contents;
    Python files by default)."""
    root = Path(package_dir)
    digest = hashlib.sha256()
    paths = {p for pattern in patterns for p in root.rglob(pattern) if "__pycache__" not in p.parts}
    for path in sorted(paths):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def read_json(path: str | os.PathLike, hint: str = ""):
    """Parse a JSON file; a missing, non-UTF-8 or damaged one is a DataError naming the file,
    what is wrong (a truncated file says at which byte) and, with hint, what to do."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(path, "missing", hint) from None
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise DataError(path, f"not UTF-8 text (byte {err.start})", hint) from None
    except json.JSONDecodeError as err:
        # cut off between values, or inside a string that runs to the end of the file
        if err.pos >= len(err.doc.rstrip()) or err.msg.startswith("Unterminated string"):
            found = f"truncated at byte {len(data)}" if data.strip() else "empty"
        else:
            found = f"{err.msg} at line {err.lineno}, column {err.colno}"
        raise DataError(path, f"not valid JSON ({found})", hint) from None
