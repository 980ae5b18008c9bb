"""Pinned downloads: streamed to a temporary name, size and hashes verified, then published
under the final name (a download is never visible there before it is verified, so an
interrupted fetch leaves nothing a later run could mistake for a good one); mirrors tried in
order; a directory published atomically."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import logging
import os
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from mnnrepro.errors import ReproError

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
    missing, transient = [], []
    for address in urls:
        try:
            return _download_retrying(address, dest, sha256, size, sha1, timeout, md5)
        except Transient as err:
            log.warning("%s: %s, %d times; trying the next mirror", address, err, ATTEMPTS)
            transient.append(f"{address} ({err}, {ATTEMPTS} attempts)")
        except MirrorMissing as err:
            log.warning("%s: %s; trying the next mirror", address, err)
            missing.append(f"{address} ({err})")
    raise _no_mirror_error(dest, sha256, md5, missing, transient)


def _download_retrying(address, dest, sha256, size, sha1, timeout, md5) -> Path:
    """One address, again after a transient failure (ATTEMPTS in all, waiting longer each
    time); the last transient failure, or a missing file, is raised to try the next."""
    for attempt in range(1, ATTEMPTS):
        try:
            return _download_one(address, dest, sha256, size, sha1, timeout, md5)
        except Transient as err:
            wait = RETRY_WAIT_S * attempt
            log.warning("%s: %s; again in %g s (%d of %d)", address, err, wait, attempt, ATTEMPTS)
            time.sleep(wait)
    return _download_one(address, dest, sha256, size, sha1, timeout, md5)


def _no_mirror_error(dest: Path, sha256, md5, missing: list, transient: list) -> FetchError:
    """What to do when no address gave the file: wait (only transient failures) or re-pin."""
    if transient and not missing:
        return FetchError(
            f"{dest.name}: every address failed as a network or server fault may, "
            f"{ATTEMPTS} times each: {'; '.join(transient)}. Nothing was kept; run it again "
            "later (or add a mirror to the pin's `mirrors`)"
        )
    pin = f"sha256 {sha256}" if sha256 else f"md5 {md5}"
    return FetchError(
        f"{dest.name}: no mirror has the pinned file ({pin}): {'; '.join(missing + transient)}. "
        "Update the pin: find the same file's current or permanent address (for a Debian "
        "package https://snapshot.debian.org/file/<sha1>) and add it to the pin's `mirrors`, "
        "or pin a newer file with its own checksum"
    )


class MirrorMissing(FetchError):
    """This address does not have the file (not found, gone, or unreachable): the next
    mirror is tried (download() never lets it escape)."""


class Transient(MirrorMissing):
    """A failure that may pass (HTTP 408, 429 or 5xx, a transfer dropped, cut short or timed
    out): the same address is tried again, ATTEMPTS times in all, then the next mirror."""


ATTEMPTS = 3  # per address, for a transient failure
RETRY_WAIT_S = 1.0  # before the second attempt; twice that before the third
TRANSIENT_HTTP = {408, 429, 500, 502, 503, 504}


def _download_one(url, dest: Path, sha256, size, sha1, timeout, md5) -> Path:
    """One attempt: streamed to a temporary file beside dest, verified, then renamed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, _open(url, timeout) as resp:
            expected = resp.headers.get("Content-Length")
            total, hashes = _stream(resp, out, dest.name, expected)
        if expected is not None and total != int(expected):
            raise Transient(f"truncated download, {total} of {expected} bytes")
        if size is not None and total != size:
            raise FetchError(f"{url}: {total} bytes, the pin says {size}")
        for name, pinned in (("sha256", sha256), ("md5", md5), ("sha1", sha1)):
            got = hashes[name].hexdigest()
            if pinned and got != pinned:
                raise FetchError(f"{url}: {name} {got} does not match the pinned {pinned}")
        os.replace(tmp, dest)
    except Exception as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, FetchError):  # MirrorMissing included: the caller moves on
            raise
        if isinstance(err, (TimeoutError, ConnectionError, http.client.IncompleteRead)):
            raise Transient(f"{type(err).__name__}: {err}") from err  # mid-transfer
        raise FetchError(f"{url}: download failed: {err}") from err
    return dest


def _open(url: str, timeout: float):
    """The response; an address without the file is MirrorMissing, one that may answer
    later Transient."""
    try:
        return urllib.request.urlopen(url, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code in (404, 410):
            raise MirrorMissing(f"HTTP {err.code} {err.reason}") from None
        if err.code in TRANSIENT_HTTP:
            raise Transient(f"HTTP {err.code} {err.reason}") from None
        raise
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError):
            raise Transient(f"timed out: {err.reason}") from None
        raise MirrorMissing(f"unreachable: {err.reason}") from None


def _stream(resp, out, name: str, expected: str | None) -> tuple[int, dict]:
    """Copy the response to out, hashing as it goes (logging every 64 MiB); the bytes copied
    and the hashes."""
    total, last_report = 0, 0
    hashes = {"sha256": hashlib.sha256(), "sha1": hashlib.sha1(), "md5": hashlib.md5()}
    while chunk := resp.read(CHUNK):
        out.write(chunk)
        for h in hashes.values():
            h.update(chunk)
        total += len(chunk)
        if total - last_report >= 64 * CHUNK:
            of = f" of {int(expected) >> 20} MiB" if expected else ""
            log.info("%s: %d MiB%s", name, total >> 20, of)
            last_report = total
    return total, hashes


def pin_urls(pin: dict) -> list[str]:
    """A pin's addresses in order: `url`, then its `mirrors`."""
    return [pin["url"], *pin.get("mirrors", [])]


# a wheel's file name (PEP 427): name-version-python-abi-platform.whl
WHEEL_NAME = re.compile(
    r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-(?P<python>[^-]+)-(?P<abi>[^-]+)-"
    r"(?P<platform>[^-]+)\.whl$"
)
WHEEL_MACHINES = ("x86_64", "aarch64")  # a compiled wheel's machine, ending its platform tag


def wheel_name(url: str) -> dict | None:
    """A wheel's name, version, python and abi tags and machine (x86_64, aarch64; None for a
    pure-Python wheel), from the file name its URL ends in; None: not a wheel's file name."""
    found = WHEEL_NAME.match(url.rsplit("/", 1)[1])
    if not found:
        return None
    machine = next((m for m in WHEEL_MACHINES if found["platform"].endswith(m)), None)
    return {**{k: found[k] for k in ("name", "version", "python", "abi")}, "arch": machine}


def verified(pin: dict, key: str, cache: Path) -> Path:
    """A pin's file ({url, sha256, mirrors}), downloaded into cache unless it holds it, checked
    against its sha256; a failure is one FetchError line naming the config key."""
    try:
        return download(pin_urls(pin), cache / pin["url"].rsplit("/", 1)[1], pin["sha256"])
    except FetchError as err:
        raise FetchError(f"config key `{key}`: {err}") from None


def _digest(path: Path, algorithm: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, algorithm).hexdigest()


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
