"""MNN source at a pinned commit: a git URL + full commit, a local checkout, or an archive."""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from mnnrepro.config import is_full_commit
from mnnrepro.errors import ReproError
from mnnrepro.fetch import FetchError, download, pin_urls, publish_dir
from mnnrepro.files import sha256_file
from mnnrepro.unpack import safe_extract

log = logging.getLogger(__name__)


class SourceError(ReproError, RuntimeError):
    pass


# MNN releases by the git tree of their commit (`git rev-parse <commit>^{tree}`, read from
# MNN's repository): a local checkout, or a commit of another history (a copy re-committed),
# whose tree is one of these holds exactly that release's files.
RELEASE_TREES = {
    "33df4af812ff1960795dd11b53ceccf3a7187d93": (
        "MNN 3.6.1",
        "d407447ed56c4121a11ccbd266dc184ca1ead0c2",
    ),
    "bbb37273af33459768038ce5810ba8f431f21ed3": (
        "MNN 3.6.0",
        "cc20f672af9e177e2fa338c332dc097de2fc9264",
    ),
}


def release_of(tree: str, dirty: bool) -> dict | None:
    """The release whose files the tree holds, where it is one (and whether the working files
    differ from that commit's: then the release is only where the build started)."""
    if tree not in RELEASE_TREES:
        return None
    name, commit = RELEASE_TREES[tree]
    return {"name": name, "commit": commit, "tree": tree, "dirty": dirty}


def release_text(source: dict) -> str:
    """How a build's source says which release it is: `MNN 3.6.1 (d407447)`, or that it is
    none of the known ones."""
    release = source.get("release")
    if release:
        changed = ", with local changes" if release["dirty"] else ""
        return f"{release['name']} ({release['commit'][:7]}{changed})"
    if "tree" in source:
        return f"tree {source['tree'][:10]}, no known release"
    return "its release not recorded"


def git(*args: str, cwd: str | os.PathLike | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SourceError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def checkout_git(url: str, commit: str, dest: str | os.PathLike) -> dict:
    """Fetch exactly `commit` from url into dest (replaced); verify HEAD is that commit."""
    if not is_full_commit(commit):
        raise SourceError(
            f"config key `mnn.source.commit`: {commit!r} is not a full 40-hex "
            "commit (tags and branches move; pin the commit)"
        )
    dest = Path(dest)
    with publish_dir(dest) as staging:
        git("init", "-q", str(staging))
        git("fetch", "-q", "--depth", "1", url, commit, cwd=staging)
        git("-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD", cwd=staging)
        head = git("rev-parse", "HEAD", cwd=staging)
        if head != commit:
            raise SourceError(f"{url}: fetched {head}, not the pinned {commit}")
        tree = git("rev-parse", "HEAD^{tree}", cwd=staging)
    receipt = {"kind": "git", "url": url, "commit": head, "dirty": False, "path": str(dest)}
    return {**receipt, "tree": tree, "release": release_of(tree, False)}


def describe_local(path: str | os.PathLike, allow_dirty: bool) -> dict:
    """A local checkout used in place: record its commit; refuse local changes unless allowed."""
    path = Path(path).resolve()
    if not path.is_dir():
        raise SourceError(f"config key `mnn.source.path`: {path} is not a directory")
    commit = git("rev-parse", "HEAD", cwd=path)
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", cwd=path))
    if dirty and not allow_dirty:
        raise SourceError(
            f"config key `mnn.source.path`: {path} has uncommitted changes; "
            "commit them, or set `mnn.source.allow_dirty: true` to benchmark "
            "them anyway (recorded as dirty)"
        )
    tree = git("rev-parse", "HEAD^{tree}", cwd=path)
    receipt = {"kind": "path", "path": str(path), "commit": commit, "dirty": dirty}
    return {**receipt, "tree": tree, "release": release_of(tree, dirty)}


def unpack_archive(url: str, sha256: str, dest: str | os.PathLike) -> dict:
    dest = Path(dest)
    tarball = download(url, dest.with_name(dest.name + ".tar.gz"), sha256)
    if not tarfile.is_tarfile(tarball):
        raise FetchError(f"{url}: not a tar archive")
    safe_extract(tarball, dest)
    return {"kind": "archive", "url": url, "sha256": sha256, "commit": None, "path": str(dest)}


def apply_patches(tree: str | os.PathLike, patches: list[dict], dest: str | os.PathLike) -> list:
    """A copy of tree (its committed files where it is a git checkout) at dest, replaced, with
    each patch applied in order; each checked against its pinned sha256 first. Returns what
    was applied (path, sha256)."""
    tree, applied = Path(tree), []
    for i, patch in enumerate(patches):
        path = Path(patch["path"])
        if not path.is_file():  # the config's check names its key (plan.checks)
            raise SourceError(f"patch {i} of this source: no file {patch['path']!r}")
        if sha256_file(path) != patch["sha256"]:
            raise SourceError(
                f"patch {i} of this source: {patch['path']} has another sha256 "
                f"({sha256_file(path)}); pin the patch you mean to measure"
            )
    with publish_dir(dest) as staging:
        if (tree / ".git").exists():  # its committed tree: what the recorded commit holds
            archive = subprocess.run(
                ["git", "-C", str(tree), "archive", "--format=tar", "HEAD"],
                capture_output=True,
                check=True,
            ).stdout
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(staging, filter="data")
        else:
            shutil.copytree(tree, staging, symlinks=True, dirs_exist_ok=True)
        for i, patch in enumerate(patches):
            path = str(Path(patch["path"]).resolve())
            for check in (["--check"], []):
                proc = subprocess.run(
                    ["git", "apply", *check, "-p1", path],
                    cwd=staging,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode != 0:
                    raise SourceError(
                        f"patch {i} of this source, {patch['path']}, does not apply to the "
                        f"source tree: {proc.stderr.strip().splitlines()[0]}"
                    )
            applied.append({"path": patch["path"], "sha256": patch["sha256"]})
    return applied


def provide_source(
    source: dict, kleidiai: dict, cache: str | os.PathLike, patches: list[dict] = ()
) -> dict:
    """The MNN tree every build uses (with its patches applied to a copy), plus CMake flags for
    pinned dependencies (KleidiAI)."""
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    if "git" in source:
        receipt = checkout_git(source["git"], source["commit"], cache / "src")
    elif "path" in source:
        receipt = describe_local(source["path"], source.get("allow_dirty", False))
    else:
        receipt = unpack_archive(source["archive"], source["sha256"], cache / "src")
    if patches:
        receipt["patched_from"] = receipt["path"]
        receipt["patches"] = apply_patches(receipt["path"], list(patches), cache / "patched")
        receipt["path"] = str((cache / "patched").resolve())
    receipt["cmake_flags"] = {}
    if kleidiai:
        # MNN downloads KleidiAI at configure time and silently builds without it on failure;
        # we fetch the pinned tarball ourselves and point MNN at it.
        receipt["kleidiai"] = provide_kleidiai(kleidiai, cache)
        receipt["cmake_flags"]["KLEIDIAI_SRC_DIR"] = receipt["kleidiai"]["path"]
    return receipt


def provide_kleidiai(kleidiai: dict, cache: Path) -> dict:
    """KleidiAI's pinned source archive, downloaded (verified) and extracted under cache; the
    pin with the absolute path of its tree (CMake resolves a relative one against the project)."""
    dest = cache / f"kleidiai-{kleidiai['version']}"
    tarball = download(
        pin_urls(kleidiai),
        cache / f"kleidiai-{kleidiai['version']}.tar.gz",
        kleidiai.get("sha256"),
        md5=kleidiai.get("md5"),
    )
    if not dest.is_dir():
        safe_extract(tarball, dest)
    roots = [p for p in dest.iterdir() if p.is_dir()]
    tree = (roots[0] if len(roots) == 1 else dest).resolve()
    return {**kleidiai, "path": str(tree)}
