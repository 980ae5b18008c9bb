"""The Android NDK: an installed one whose revision matches the pin, found where Android
tools look (in this order: $ANDROID_NDK_ROOT, $ANDROID_NDK_HOME, $ANDROID_NDK, then the SDK's
side-by-side NDKs $ANDROID_HOME/ndk/<revision> and $ANDROID_SDK_ROOT/ndk/<revision>), else the
pinned download."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mnnrepro.fetch import FetchError, download, pin_urls
from mnnrepro.unpack import read_properties, safe_extract_zip

log = logging.getLogger(__name__)


NDK_VARS = ("ANDROID_NDK_ROOT", "ANDROID_NDK_HOME", "ANDROID_NDK")  # an NDK itself
SDK_VARS = ("ANDROID_HOME", "ANDROID_SDK_ROOT")  # an SDK, with ndk/<revision>/ inside


def revision(ndk_root: str | os.PathLike) -> str | None:
    props = Path(ndk_root) / "source.properties"
    return read_properties(props).get("Pkg.Revision") if props.is_file() else None


def candidates(pin: dict, environ) -> list[tuple[str, str]]:
    """(where it came from, path) of every installed NDK to try, in discovery order."""
    found = [(f"${var}", environ[var]) for var in NDK_VARS if environ.get(var)]
    found += [
        (f"${var}/ndk/{pin['revision']}", str(Path(environ[var]) / "ndk" / pin["revision"]))
        for var in SDK_VARS
        if environ.get(var)
    ]
    return found


def local_ndk(pin: dict, environ: dict | None = None) -> dict | None:
    """The first installed NDK whose source.properties revision is the pin's; each one
    passed over is logged with its revision."""
    environ = os.environ if environ is None else environ
    for source, root in candidates(pin, environ):
        found = revision(root)
        if found == pin["revision"]:
            log.info("using the NDK at %s=%s (revision %s matches the pin)", source, root, found)
            return {"path": str(Path(root).resolve()), "revision": found, "source": source}
        log.warning(
            "%s=%s: revision %s, the pin is %s: not used", source, root, found, pin["revision"]
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
            pin_urls(pin),
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
