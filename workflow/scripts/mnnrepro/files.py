"""Shared file I/O of every stage: sha256 of files and trees, atomic JSON, pinned downloads
(streamed to a temporary name, size and hashes verified, then published), and the one place
where archives are extracted (tar, zip and Debian packages), never outside their target.

A download is never visible under its final name before it is verified, and an archive is
extracted into a staging directory beside its destination and renamed into place, so an
interrupted fetch leaves nothing that a later run could mistake for a good one."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import stat
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from mnnrepro.errors import DataError, ReproError

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


log = logging.getLogger(__name__)


CHUNK = 1 << 20


class FetchError(ReproError, RuntimeError):
    pass


def download(
    url: str | list[str],
    dest: str | os.PathLike,
    sha256: str | None,
    size: int | None = None,
    sha1: str | None = None,
    timeout: float = 60,
    md5: str | None = None,
) -> Path:
    """Download to dest unless dest already verifies; returns dest.

    url: one address or an ordered list of mirrors of the same file (e.g. Debian's pool, then
    snapshot.debian.org's permanent address): a mirror that does not have it (HTTP 404/410,
    no connection) moves on to the next; a file that fails its checksum or size is fatal on
    any mirror. sha256 is the pin; md5 is accepted alone only where upstream publishes nothing
    better (MNN's own KleidiAI check).
    """
    urls = [url] if isinstance(url, str) else list(url)
    if not (sha256 or md5):
        raise FetchError(f"{urls[0]}: no checksum pinned; refusing an unverified download")
    dest = Path(dest)
    if dest.exists() and (
        _digest(dest, "sha256") == sha256 if sha256 else _digest(dest, "md5") == md5
    ):
        log.info("%s already present and verified", dest)
        return dest
    missing = []
    for address in urls:
        try:
            return _download_one(address, dest, sha256, size, sha1, timeout, md5)
        except MirrorMissing as err:
            log.warning("%s: %s; trying the next mirror", address, err)
            missing.append(f"{address} ({err})")
    pin = f"sha256 {sha256}" if sha256 else f"md5 {md5}"
    raise FetchError(
        f"{dest.name}: no mirror has the pinned file ({pin}): {'; '.join(missing)}. Update the "
        "pin: find the same file's current or permanent address (for a Debian package "
        "https://snapshot.debian.org/file/<sha1>) and add it to the pin's `mirrors`, or pin "
        "a newer file with its own checksum"
    )


class MirrorMissing(FetchError):
    """This address does not have the file (not found, gone, or unreachable): the next
    mirror is tried (download() never lets it escape)."""


def _download_one(url, dest: Path, sha256, size, sha1, timeout, md5) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                resp = urllib.request.urlopen(url, timeout=timeout)
            except urllib.error.HTTPError as err:
                if err.code in (404, 410):
                    raise MirrorMissing(f"HTTP {err.code} {err.reason}") from None
                raise
            except urllib.error.URLError as err:
                raise MirrorMissing(f"unreachable: {err.reason}") from None
            with resp:
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
        if isinstance(err, FetchError):  # MirrorMissing included: the caller moves on
            raise
        raise FetchError(f"{url}: download failed: {err}") from err
    return dest


def pin_urls(pin: dict) -> list[str]:
    """A pin's addresses in order: `url`, then its `mirrors`."""
    return [pin["url"], *pin.get("mirrors", [])]


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
    with publish_dir(dest) as staging:
        extract_zip_into(archive, staging)


def extract_zip_into(archive: str | os.PathLike, directory: str | os.PathLike) -> None:
    """Extract a zip into an existing directory; every member is checked before anything is
    written (no absolute or `..` names, no link that leaves the directory)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive) as zf:
        root = directory.resolve()
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


class UnsafeArchiveError(ReproError, ValueError):
    pass


def check_member_name(name: str) -> None:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name:
        raise UnsafeArchiveError(f"unsafe archive member name {name!r}")


def extract_members(tar: tarfile.TarFile, dest: Path, members: list, filter_name: str) -> None:
    """tar.extractall of members already checked by the caller, with tarfile's extraction
    filter as a second line of defence. Pythons before 3.11.4 (Debian 12's 3.11.2) have no
    filters; there the permission part of both filters is applied by hand: no set-uid,
    set-gid or sticky bit, and no write bit for group or others."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members, filter=filter_name)
        return
    for member in members:
        member.mode &= 0o755
    tar.extractall(dest, members=members)


def safe_extract(archive: str | os.PathLike, dest: str | os.PathLike) -> list[str]:
    """Extract regular files and directories only; refuse links, devices and escaping paths.

    Every member is checked before anything is written. Returns the extracted names.
    """
    dest = Path(dest).resolve()
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()
        for m in members:
            check_member_name(m.name)
            if not (m.isfile() or m.isdir()):
                raise UnsafeArchiveError(f"archive member {m.name!r} is not a regular file")
            target = (dest / m.name).resolve()
            if dest != target and dest not in target.parents:
                raise UnsafeArchiveError(f"archive member {m.name!r} escapes {dest}")
        dest.mkdir(parents=True, exist_ok=True)
        extract_members(tar, dest, members, "data")
    return [m.name for m in members if m.isfile()]


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
        extract_members(tar, dest, infos, "tar")
    return [i.name for i in infos if i.isfile()]
