"""Pinned downloads: stream to a temporary name, verify size and hashes, then publish.

A download is never visible under its final name before it is verified, and an archive is
extracted into a staging directory beside its destination and renamed into place, so an
interrupted fetch leaves nothing that a later run could mistake for a good one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
import tempfile
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

log = logging.getLogger(__name__)
CHUNK = 1 << 20


class FetchError(RuntimeError):
    pass


def download(
    url: str,
    dest: str | os.PathLike,
    sha256: str | None,
    size: int | None = None,
    sha1: str | None = None,
    timeout: float = 60,
    md5: str | None = None,
) -> Path:
    """Download url to dest unless dest already verifies; returns dest.

    sha256 is the pin; md5 is accepted alone only where upstream publishes nothing better
    (MNN's own KleidiAI check).
    """
    if not (sha256 or md5):
        raise FetchError(f"{url}: no checksum pinned; refusing an unverified download")
    dest = Path(dest)
    if dest.exists() and (
        _digest(dest, "sha256") == sha256 if sha256 else _digest(dest, "md5") == md5
    ):
        log.info("%s already present and verified", dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            expected = resp.headers.get("Content-Length")
            total, last_report = 0, 0
            hashes = {"sha256": hashlib.sha256(), "sha1": hashlib.sha1(), "md5": hashlib.md5()}
            while chunk := resp.read(CHUNK):
                out.write(chunk)
                for h in hashes.values():
                    h.update(chunk)
                total += len(chunk)
                if total - last_report >= 64 * CHUNK:
                    log.info(
                        "%s: %d MiB%s",
                        dest.name,
                        total >> 20,
                        f" of {int(expected) >> 20} MiB" if expected else "",
                    )
                    last_report = total
        if expected is not None and total != int(expected):
            raise FetchError(f"{url}: truncated download, {total} of {expected} bytes")
        if size is not None and total != size:
            raise FetchError(f"{url}: {total} bytes, the pin says {size}")
        got = hashes["sha256"].hexdigest()
        if sha256 and got != sha256:
            raise FetchError(f"{url}: sha256 {got} does not match the pinned {sha256}")
        if md5 and hashes["md5"].hexdigest() != md5:
            raise FetchError(
                f"{url}: md5 {hashes['md5'].hexdigest()} does not match the pinned {md5}"
            )
        if sha1 is not None and hashes["sha1"].hexdigest() != sha1:
            raise FetchError(
                f"{url}: sha1 {hashes['sha1'].hexdigest()} does not match the pinned {sha1}"
            )
        os.replace(tmp, dest)
    except Exception as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, FetchError):
            raise
        raise FetchError(f"{url}: download failed: {err}") from err
    return dest


def _digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def publish_dir(dest: str | os.PathLike):
    """Yield a staging directory beside dest; on success it replaces dest in one rename.

    On any failure (or Ctrl-C) the staging directory is removed and dest is left as it was,
    so nothing half-made is ever found under the final name.
    """
    dest = Path(dest).resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        yield staging
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _inside(root: Path, target: Path) -> bool:
    return target == root or root in target.parents


def safe_extract_zip(archive: str | os.PathLike, dest: str | os.PathLike) -> None:
    """Extract a zip into dest (replaced atomically): no traversal, no link leaving dest.

    Symbolic links (Unix mode in the external attributes, as the NDK's zips carry) are kept
    when their target stays inside dest; everything is checked before dest is touched.
    """
    with publish_dir(dest) as staging, zipfile.ZipFile(archive) as zf:
        root = staging.resolve()
        infos = zf.infolist()
        links = {}
        for info in infos:
            name = PurePosixPath(info.filename)
            if name.is_absolute() or ".." in name.parts or "\\" in info.filename:
                raise FetchError(f"{archive}: unsafe member name {info.filename!r}")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                target = zf.read(info).decode()
                where = (root / name).parent / target
                if PurePosixPath(target).is_absolute() or not _inside(
                    root, Path(os.path.normpath(where))
                ):
                    raise FetchError(
                        f"{archive}: link {info.filename!r} -> {target!r} "
                        "leaves the extraction directory"
                    )
                links[info.filename] = target
        for info in infos:
            path = root / info.filename
            if info.filename in links:
                path.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(links[info.filename], path)
            elif info.is_dir():
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(path, "wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    path.chmod(mode)


def read_properties(path: str | os.PathLike) -> dict[str, str]:
    props = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props
