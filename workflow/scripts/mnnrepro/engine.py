"""MNN engines: what exactly runs, recorded as engine.json."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from mnnrepro.hashing import sha256_file


class EngineError(RuntimeError):
    pass


def describe_prebuilt(name: str, pin: str) -> dict:
    """Check that the installed `mnn` wheel is the pinned one and hash its native libraries.

    Nothing is installed at run time: a mismatch is an error telling how to fix the install.
    """
    wanted = pin.split("==", 1)[1]
    try:
        installed = metadata.version("mnn")
    except metadata.PackageNotFoundError as err:
        raise EngineError(
            f"config key `engines.{name}.prebuilt.pypi` asks for {pin}, but `mnn` is not "
            f"installed; install it with: pip install '{pin}'"
        ) from err
    if installed != wanted:
        raise EngineError(
            f"config key `engines.{name}.prebuilt.pypi` asks for {pin}, but mnn {installed} is "
            f"installed; install the pinned version with: pip install '{pin}'"
        )
    dist = metadata.distribution("mnn")
    natives = sorted(str(f) for f in dist.files or [] if str(f).endswith(".so") or ".so." in str(f))
    return {
        "engine": name,
        "kind": "prebuilt",
        "pin": pin,
        "version": installed,
        "files": [
            {"path": rel, "sha256": sha256_file(Path(dist.locate_file(rel)))} for rel in natives
        ],
    }
