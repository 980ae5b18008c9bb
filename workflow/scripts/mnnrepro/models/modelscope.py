"""Models from ModelScope at a pinned revision, verified against pinned file hashes.

Files are downloaded by the real `modelscope` client (snapshot_download: progress output,
resumable) into a cache shared by all experiments (resources/modelscope/), then hard-linked
into the model directory. With `files_sha256` pinned, a mismatch or a missing file is an
error naming the file; without it the manifest records every hash (trust on first use) and
can be copied into the config to pin them."""

from __future__ import annotations

import json
import logging
import os
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.files import file_table

log = logging.getLogger(__name__)


CLIENT_FILES = (".msc", ".mv", "._____temp", ".mdl", ".lock")


class ModelSourceError(ReproError, RuntimeError):
    pass


def download(spec: dict, cache: str | os.PathLike, model: str) -> Path:
    # heavy: the download rule only
    from modelscope import snapshot_download

    kwargs = {"revision": spec["revision"], "cache_dir": str(cache)}
    if spec.get("allow_patterns"):
        kwargs["allow_patterns"] = spec["allow_patterns"]
    if spec.get("endpoint"):
        kwargs["endpoint"] = spec["endpoint"]
    try:
        return Path(snapshot_download(spec["id"], **kwargs))
    except Exception as err:
        raise ModelSourceError(
            f"config key `models.{model}.modelscope`: could not download {spec['id']} at "
            f"revision {spec['revision']!r}: {err}"
        ) from err


DEFAULT_ENDPOINT = "https://modelscope.cn"


def resolved_revisions(spec: dict, timeout: float = 60) -> dict[str, str]:
    """path -> the commit the hub lists each file at, for the requested revision (a branch
    or tag such as `master` moves; a commit does not). The same listing the client asks for
    (`/api/v1/models/<id>/repo/files`), read directly: the client keeps only path and size."""
    endpoint = spec.get("endpoint") or os.environ.get("MODELSCOPE_DOMAIN") or DEFAULT_ENDPOINT
    if "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    query = urllib.parse.urlencode({"Revision": spec["revision"], "Recursive": "True"})
    url = f"{endpoint.rstrip('/')}/api/v1/models/{spec['id']}/repo/files?{query}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            listing = json.load(resp)["Data"]["Files"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("could not list %s at %s to record its commit: %s", spec["id"], url, err)
        return {}
    return {
        f["Path"]: f["Revision"] for f in listing if f.get("Type") != "tree" and f.get("Revision")
    }


def cache_dir(configured: str | os.PathLike, environ=None) -> str:
    """Where snapshots are kept: an existing ModelScope cache ($MODELSCOPE_CACHE, the client's
    own variable) if set, else the workflow's resources/modelscope/."""
    environ = os.environ if environ is None else environ
    return environ.get("MODELSCOPE_CACHE") or str(configured)


def verify(files: list[dict], pinned: dict[str, str], model: str) -> None:
    have = {f["path"]: f["sha256"] for f in files}
    for path, digest in sorted(pinned.items()):
        if path not in have:
            raise ModelSourceError(
                f"config key `models.{model}.modelscope.files_sha256`: "
                f"{path} is pinned but was not downloaded"
            )
        if have[path] != digest:
            raise ModelSourceError(
                f"config key `models.{model}.modelscope.files_sha256`: "
                f"{path} has sha256 {have[path]}, pinned {digest}"
            )


def link_tree(src: Path, dst: Path) -> None:
    """dst (replaced) mirrors src with hard links (a copy across file systems)."""
    if dst.exists():
        shutil.rmtree(dst)
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if any(part.startswith(CLIENT_FILES) for part in rel.parts) or not path.is_file():
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)


def fetch_model(spec: dict, cache: str | os.PathLike, dst: str | os.PathLike, model: str) -> dict:
    """Download (or reuse) the snapshot, verify it, link it into dst; returns the manifest."""
    cache = cache_dir(cache)
    snapshot = download(spec, cache, model)
    revisions = resolved_revisions(spec)
    link_tree(snapshot, Path(dst))
    files = file_table(dst)
    verify(files, spec.get("files_sha256", {}), model)
    pinned = bool(spec.get("files_sha256"))
    if not pinned:
        log.warning(
            "model %s: no files_sha256 pinned; trusting this first download. Copy the "
            "manifest's hashes into the config to pin them.",
            model,
        )
    return {
        "model": model,
        "source": "modelscope",
        "id": spec["id"],
        "revision": spec["revision"],
        # what the requested revision resolved to: one commit, or each file's if they differ
        "resolved_commit": (
            next(iter(set(revisions.values()))) if len(set(revisions.values())) == 1 else None
        ),
        "file_revisions": revisions,
        "cache": cache,
        "hashes": "pinned" if pinned else "trust on first use",
        "exporter": {"package": "none (downloaded)", "version": "", "arguments": []},
        "files": files,
    }
