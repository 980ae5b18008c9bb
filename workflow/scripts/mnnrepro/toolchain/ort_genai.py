"""ONNX Runtime GenAI's pinned wheels for one platform (config `ort_genai.wheels.<platform>`):
downloaded by sha256, unpacked side by side into the directory a device's Python imports them
from (results/engines/<key>/bin, staged on the device by hash like a build's), and what its
ONNX Runtime library carries, read from its bytes: KleidiAI's kernel-table names (SME2, SME,
the rest), the session options it reads (`mlas.disable_kleidiai` among them), the newest
GLIBC symbol version it needs, and the Python its extensions are built for."""

from __future__ import annotations

import re
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.fetch import FetchError, download, pin_urls, publish_dir
from mnnrepro.files import file_table
from mnnrepro.unpack import extract_zip_into

PACKAGES = ("onnxruntime", "onnxruntime_genai")  # the two wheels of a platform, in this order
LIBRARY = "onnxruntime/capi/libonnxruntime.so.*"
KERNEL_NAME = re.compile(rb"kai_run_[a-z0-9_]+")
# ONNX Runtime's session configuration keys (onnxruntime_session_options_config_keys.h) as
# NUL-terminated strings in its library: `session.*`, `mlas.*`, `optimization.*`, ...
SESSION_OPTION = re.compile(rb"(?<=\x00)((?:session|mlas|optimization|kernel|ep)\.[a-z0-9_.]+)\x00")
GLIBC = re.compile(rb"GLIBC_2\.(\d+)")
WHEEL_NAME = re.compile(
    r"^(?P<name>[A-Za-z0-9_]+)-(?P<version>[^-]+)-(?P<python>cp\d+)-cp\d+-\w+?_(?P<arch>x86_64|aarch64)\.whl$"
)
SWITCH = "mlas.disable_kleidiai"  # "1": MLAS's own kernels instead of all of KleidiAI's


class WheelError(ReproError, ValueError):
    pass


def wheel_identity(url: str, key: str) -> dict:
    """(package, version, python tag) of a pinned wheel, from its file name."""
    found = WHEEL_NAME.match(url.rsplit("/", 1)[1])
    if not found:
        raise WheelError(f"config key `{key}`: {url} is not a CPython wheel's file name")
    return found.groupdict()


def fetch_wheels(platform: str, pins: list[dict], cache: str | Path, site: str | Path) -> dict:
    """Download and verify the platform's two wheels, unpack them into site (published whole),
    and describe what they hold. A pin whose file fails its sha256 is refused naming its key."""
    wheels = []
    for i, (package, pin) in enumerate(zip(PACKAGES, pins, strict=True)):
        key = f"ort_genai.wheels.{platform}[{i}]"
        identity = wheel_identity(pin["url"], key)
        if identity["name"] != package:
            raise WheelError(f"config key `{key}`: expected the {package} wheel, got {pin['url']}")
        name = pin["url"].rsplit("/", 1)[1]
        try:
            path = download(pin_urls(pin), Path(cache) / name, pin["sha256"])
        except FetchError as err:
            raise FetchError(f"config key `{key}`: {err}") from None
        wheels.append({**identity, "file": name, "sha256": pin["sha256"], "path": path})
    with publish_dir(site) as staging:
        for wheel in wheels:
            extract_zip_into(wheel.pop("path"), staging)
    return {
        "platform": platform,
        "wheels": wheels,
        "versions": {w["name"]: w["version"] for w in wheels},
        # the engine's version as tables show it: onnxruntime's, then genai's
        "version": "/genai-".join(w["version"] for w in wheels),
        "pin": " ".join(f"{w['name']}=={w['version']}" for w in wheels) + f" ({platform} wheels)",
        "python": wheels[0]["python"],
        "target_arch": wheels[0]["arch"],  # the wheels' machine (x86_64: no KleidiAI at all)
        "library": library_facts(site),
        "files": [f for f in file_table(site) if not f["path"].endswith(".pyc")],
    }


def library_facts(site: str | Path) -> dict:
    """What the site's libonnxruntime.so carries, read from its bytes."""
    found = sorted(Path(site).glob(LIBRARY))
    if len(found) != 1:
        raise WheelError(f"{site}: expected one {LIBRARY}, found {[p.name for p in found]}")
    data = found[0].read_bytes()
    kernels = sorted({m.decode() for m in KERNEL_NAME.findall(data)})
    glibc = max((int(v) for v in GLIBC.findall(data)), default=None)
    return {
        "path": found[0].relative_to(site).as_posix(),
        "kleidiai_kernels": kernels,
        "sme2_kernels": [k for k in kernels if "_sme2_" in k],
        "sme_kernels": [k for k in kernels if "_sme_" in k],
        "session_options": sorted({m.decode() for m in SESSION_OPTION.findall(data)}),
        "newest_glibc": f"GLIBC_2.{glibc}" if glibc is not None else None,
    }
