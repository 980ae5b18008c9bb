"""The one place archives are extracted (tar, zip and Debian packages): never outside their
target (no traversal, no link leaving it), into a staging directory beside the destination
and renamed into place."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from mnnrepro.errors import ReproError
from mnnrepro.fetch import CHUNK, FetchError, publish_dir


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


def extract_zip_members(
    archive, prefix: str, directory: str | os.PathLike, keep_tree: bool = False
) -> list[str]:
    """Extract a zip's regular files under prefix into directory: each under its own name
    (keep_tree: under its path below prefix); names checked like extract_zip_into's, links
    refused. archive: a path or a seekable file. Returns the names written below directory."""
    directory = Path(directory)
    written = []
    with zipfile.ZipFile(archive) as zf:
        chosen = [i for i in zf.infolist() if i.filename.startswith(prefix) and not i.is_dir()]
        for info in chosen:
            check_member_name(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise UnsafeArchiveError(f"archive member {info.filename!r} is a link")
        for info in chosen:
            rest = info.filename[len(prefix) :]
            name = rest if keep_tree else PurePosixPath(rest).name
            path = directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
            written.append(name)
    return written


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


def extract_deb(
    deb: str | os.PathLike, dest: str | os.PathLike, only: tuple[str, ...] = ()
) -> list[str]:
    """Unpack a .deb's data.tar.* into dest; every member is checked before anything is written.

    Absolute symbolic links are re-rooted inside dest (a sysroot's `/etc/x` is dest/etc/x);
    a link that would still leave dest is refused. only: the paths to write (as the package
    names them, e.g. `usr/bin/qemu-aarch64`), where the rest is not needed; every member is
    still checked, and a path the package does not hold is an error naming it.
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
        if only:
            wanted = {PurePosixPath(p) for p in only}
            infos = [i for i in infos if PurePosixPath(i.name) in wanted]
            missing = wanted - {PurePosixPath(i.name) for i in infos}
            if missing:
                raise FetchError(f"{deb}: holds no {', '.join(sorted(map(str, missing)))}")
        dest.mkdir(parents=True, exist_ok=True)
        extract_members(tar, dest, infos, "tar")
    return [i.name for i in infos if i.isfile()]
