"""The Android NDK: a matching local one ($ANDROID_NDK / $ANDROID_NDK_HOME), else the pin."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mnnrepro.files import FetchError, download, read_properties, safe_extract_zip

log = logging.getLogger(__name__)


ENV_VARS = ("ANDROID_NDK", "ANDROID_NDK_HOME")


def revision(ndk_root: str | os.PathLike) -> str | None:
    props = Path(ndk_root) / "source.properties"
    return read_properties(props).get("Pkg.Revision") if props.is_file() else None


def local_ndk(pin: dict, environ: dict | None = None) -> dict | None:
    environ = os.environ if environ is None else environ
    for var in ENV_VARS:
        root = environ.get(var)
        if not root:
            continue
        found = revision(root)
        if found == pin["revision"]:
            log.info("using the NDK in $%s=%s (revision %s matches the pin)", var, root, found)
            return {"path": str(Path(root).resolve()), "revision": found, "source": f"${var}"}
        log.warning(
            "$%s=%s has revision %s, the pin is %s: not used", var, root, found, pin["revision"]
        )
    return None


def provide_ndk(pin: dict, cache: str | os.PathLike, environ: dict | None = None) -> dict:
    """Return {path, revision, source}: a matching local NDK or the verified pinned download."""
    found = local_ndk(pin, environ)
    if found:
        return found
    cache = Path(cache)
    final = cache / pin["version"]
    if not (final.is_dir() and _ndk_root(final) and revision(_ndk_root(final)) == pin["revision"]):
        archive = download(
            pin["url"],
            cache / f"{pin['version']}.zip",
            pin["sha256"],
            pin.get("size"),
            pin.get("sha1"),
        )
        safe_extract_zip(archive, final)
        archive.unlink()
    root = _ndk_root(final)
    if root is None or revision(root) != pin["revision"]:
        raise FetchError(
            f"{final}: source.properties says revision {revision(root or final)}, "
            f"config key `toolchains.ndk.revision` pins {pin['revision']}"
        )
    log.info("using the pinned NDK %s at %s", pin["revision"], root)
    return {
        "path": str(root.resolve()),
        "revision": pin["revision"],
        "source": pin["url"],
        "sha256": pin["sha256"],
    }


def _ndk_root(extracted: Path) -> Path | None:
    """The NDK zip holds one top-level directory (android-ndk-r27c/)."""
    if (extracted / "source.properties").is_file():
        return extracted
    candidates = [p for p in extracted.iterdir() if (p / "source.properties").is_file()]
    return candidates[0] if len(candidates) == 1 else None
