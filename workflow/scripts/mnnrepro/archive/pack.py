"""Deterministic result archives.

Same inputs give the same archive bytes: entries sorted by name, every mtime 0, owner
root:root, permissions 0644/0755, gzip header without a timestamp. MANIFEST.sha256 (in
`sha256sum` format) lists every other member.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import yaml

from mnnrepro.archive.provenance import git_state, tool_versions
from mnnrepro.errors import DataError
from mnnrepro.files import read_json
from mnnrepro.unpack import check_member_name


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write_archive(out: str | os.PathLike, members: dict[str, str | os.PathLike | bytes]) -> None:
    """members: archive name -> file path or bytes. Written atomically to out."""
    blobs = {}
    for name, source in members.items():
        check_member_name(name)
        blobs[name] = source if isinstance(source, bytes) else Path(source).read_bytes()
    manifest = "".join(f"{hashlib.sha256(blobs[n]).hexdigest()}  {n}\n" for n in sorted(blobs))
    blobs["MANIFEST.sha256"] = manifest.encode()
    out = Path(out)
    tmp = out.with_name(f".{out.name}.part-{os.getpid()}")
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name in sorted(blobs):
            tar.addfile(_info(name, len(blobs[name])), io.BytesIO(blobs[name]))
    os.replace(tmp, out)


def verify_manifest(root: str | os.PathLike, label: str | os.PathLike | None = None) -> None:
    """Check every file listed in root/MANIFEST.sha256; a DataError naming `label` (the
    archive; default root) and the member on the first mismatch or missing member."""
    root = Path(root)
    label = label if label is not None else root
    for line in (root / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        check_member_name(name)  # a listed name may not point outside the archive either
        if not (root / name).is_file():
            raise DataError(label, f"member {name} is listed in MANIFEST.sha256 but missing")
        actual = hashlib.sha256((root / name).read_bytes()).hexdigest()
        if actual != digest:
            raise DataError(label, f"member {name} does not match MANIFEST.sha256")


def archive_job(job) -> None:
    """Rule archive_results: the final outputs, the records a replay restores (the plan's
    archived_records), every raw file with every earlier measurement it superseded (a
    re-measurement stays on the record), the profiles, the provenance and the resolved config,
    in one archive."""

    # pulls pandas: only an archive with profiles
    from mnnrepro.analysis.attribution import profile_files

    files = {path: path for path in job.input}
    for index in map(read_json, [*job.input.runs, *job.input.sweep]):
        for entry in index["runs"]:
            for raw in [entry["raw"], *(s["raw"] for s in entry.get("superseded", []))]:
                files[raw] = raw
    for path in profile_files(job.input.profiles):
        files[path] = path
    provenance = {
        "workflow": git_state(job.repository),
        "tools": tool_versions(),
    }
    files["provenance.json"] = json.dumps(provenance, indent=2, sort_keys=True).encode()
    files["config.resolved.yaml"] = yaml.safe_dump(
        job.params.config, sort_keys=True, allow_unicode=True
    ).encode()
    write_archive(job.output.archive, files)
