"""ONNX Runtime GenAI's pinned libraries for one platform, downloaded by sha256 and unpacked
into results/engines/<key>/bin (staged on the device by hash like a build's):

- host and linux-arm64 (config `ort_genai.wheels.<platform>`): the PyPI wheels of onnxruntime
  and onnxruntime-genai, side by side, where a device's Python imports them;
- android-arm64 (`ort_genai.aars.<platform>`): the arm64-v8a libraries of Microsoft's Android
  archives (AARs) of both, under lib/, genai's C header (include/), and the model builder of
  the genai wheel of the same version (a phone runs no Python: ort_genai_tool calls genai's C
  API).

And what its ONNX Runtime library carries, read from its bytes: KleidiAI's kernel-table names
(SME2, SME, the rest), the session options it reads (`mlas.disable_kleidiai` among them), the
newest GLIBC symbol version it needs (none on Android: bionic), and the Python its extensions
are built for (the wheels'). An arm64 library without KleidiAI's SME2 kernels is refused before
use: its pair could only ever measure NEON against NEON."""

from __future__ import annotations

import contextlib
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.fetch import CHUNK, publish_dir, verified, wheel_name
from mnnrepro.files import file_table
from mnnrepro.unpack import extract_zip_into, extract_zip_members

PACKAGES = ("onnxruntime", "onnxruntime_genai")  # the two wheels of a platform, in this order
# platform -> the config section of its pins (`ort_genai.<section>.<platform>`), which is also
# the record's key for what was fetched and the layout of the unpacked directory
SECTIONS = {"host": "wheels", "linux-arm64": "wheels", "android-arm64": "aars"}
LIBRARY = {"wheels": "onnxruntime/capi/libonnxruntime.so.*", "aars": "lib/libonnxruntime.so"}
GENAI_LIBRARY = {
    "wheels": "onnxruntime_genai/libonnxruntime-genai.so",
    "aars": "lib/libonnxruntime-genai.so",
}
AAR_LIBRARIES = "jni/arm64-v8a/"  # an AAR's native libraries for arm64 phones
# genai's own C header, which its AAR ships (headers/): unpacked to include/, where the C API
# tool's build checks its declarations against the version the phone runs
AAR_HEADERS, GENAI_HEADER = "headers/", "include/ort_genai_c.h"
BUILDER = "onnxruntime_genai/models/"  # genai's model builder, in its wheel
KERNEL_NAME = re.compile(rb"kai_run_[a-z0-9_]+")
# ONNX Runtime's session configuration keys (onnxruntime_session_options_config_keys.h) as
# NUL-terminated strings in its library: `session.*`, `mlas.*`, `optimization.*`, ...
SESSION_OPTION = re.compile(rb"(?<=\x00)((?:session|mlas|optimization|kernel|ep)\.[a-z0-9_.]+)\x00")
GLIBC = re.compile(rb"GLIBC_2\.(\d+)")
CPYTHON = re.compile(r"cp\d+")  # a CPython wheel's python and abi tags
SWITCH = "mlas.disable_kleidiai"  # "1": MLAS's own kernels instead of all of KleidiAI's


class WheelError(ReproError, ValueError):
    pass


def wheel_identity(url: str, key: str) -> dict:
    """(package, version, python tag, machine) of a pinned CPython wheel, from its file name."""
    found = wheel_name(url) or {}
    compiled = found.get("arch") and all(CPYTHON.fullmatch(found[t]) for t in ("python", "abi"))
    if not compiled:
        raise WheelError(f"config key `{key}`: {url} is not a CPython wheel's file name")
    return {k: found[k] for k in ("name", "version", "python", "arch")}


KIND = "ort-genai"  # the kind its records carry (kind.OrtGenaiEngine.kind)


def section_of(platform: str) -> str:
    """Where a platform's pins are (`ort_genai.<section>.<platform>`): wheels or aars."""
    return SECTIONS[platform]


def genai_header(engine_dir: str | Path) -> Path | None:
    """genai's own C header in an engine's unpacked directory (None: its archive shipped none,
    as a wheel does not)."""
    header = Path(engine_dir) / GENAI_HEADER
    return header if header.is_file() else None


def genai_library(record) -> str:
    """libonnxruntime-genai.so's path in an engine's unpacked directory (by its platform)."""
    return GENAI_LIBRARY[section_of(record.platform)]


def fetch_ort_genai(platform: str, pins, cache: str | Path, site: str | Path) -> dict:
    """Download, verify and unpack the platform's pins into site (published whole), and
    describe what they hold: the record of wheels.json."""
    section = section_of(platform)
    with publish_dir(site) as staging:  # nothing published unless every check passes
        unpack = unpack_aars if section == "aars" else unpack_wheels
        fetched = unpack(platform, pins, Path(cache), staging)
        library = library_facts(staging, LIBRARY[section])
        if platform != "host" and not library["sme2_kernels"]:
            raise WheelError(
                f"config key `ort_genai.{section}.{platform}`: its "
                f"{Path(library['path']).name} holds no KleidiAI SME2 kernel (kai_run_*_sme2_*): "
                "its pair could only measure NEON against NEON"
            )
    versions = {p["name"]: p["version"] for p in fetched[section]}
    return {
        "kind": KIND,
        "platform": platform,
        **fetched,
        "versions": versions,
        # the engine's version as tables show it: onnxruntime's, then genai's
        "version": "/genai-".join(versions[p] for p in PACKAGES),
        "pin": " ".join(f"{n}=={v}" for n, v in versions.items()) + f" ({platform} {section})",
        "library": library,
        "files": [f for f in file_table(site) if not f["path"].endswith(".pyc")],
    }


def fetched_wheel(pin: dict, package: str, key: str, cache: Path) -> dict:
    """One pinned wheel of package, downloaded and verified: its identity and path."""
    identity = wheel_identity(pin["url"], key)
    if identity["name"] != package:
        raise WheelError(f"config key `{key}`: expected the {package} wheel, got {pin['url']}")
    path = verified(pin, key, cache)
    return {**identity, "file": path.name, "sha256": pin["sha256"], "path": path}


def unpack_wheels(platform: str, pins: list[dict], cache: Path, staging: Path) -> dict:
    """The platform's two wheels, unpacked side by side into staging."""
    wheels = []
    for i, (package, pin) in enumerate(zip(PACKAGES, pins, strict=True)):
        wheels.append(fetched_wheel(pin, package, f"ort_genai.wheels.{platform}[{i}]", cache))
    for wheel in wheels:
        extract_zip_into(wheel.pop("path"), staging)
    return {
        "wheels": wheels,
        "python": wheels[0]["python"],
        "target_arch": wheels[0]["arch"],  # the wheels' machine (x86_64: no KleidiAI at all)
    }


def unpack_aars(platform: str, pins: dict, cache: Path, staging: Path) -> dict:
    """Both AARs' arm64 libraries into staging/lib, and the model builder of the genai wheel
    of the genai AAR's version into staging (where the builder rule finds it)."""
    key = f"ort_genai.aars.{platform}"
    aars = []
    for package in PACKAGES:
        pin = pins[package]
        path = verified(pin, f"{key}.{package}", cache)
        with aar_file(path, pin.get("member"), f"{key}.{package}") as aar:
            if not extract_zip_members(aar, AAR_LIBRARIES, staging / "lib"):
                raise WheelError(f"config key `{key}.{package}`: no {AAR_LIBRARIES} in its AAR")
            if package == PACKAGES[1]:
                extract_zip_members(aar, AAR_HEADERS, staging / Path(GENAI_HEADER).parent)
        file = {"file": path.name, "sha256": pin["sha256"], "member": pin.get("member")}
        aars.append({"name": package, "version": pin["version"], **file})
    builder = fetched_wheel(pins["builder"], PACKAGES[1], f"{key}.builder", cache)
    if builder["version"] != pins[PACKAGES[1]]["version"]:
        raise WheelError(
            f"config key `{key}.builder`: genai {builder['version']}'s builder for the genai "
            f"{pins[PACKAGES[1]]['version']} AAR (a model must be one its runtime reads)"
        )
    extract_zip_members(builder.pop("path"), BUILDER, staging / BUILDER, keep_tree=True)
    return {"aars": aars, "builder": builder, "python": None, "target_arch": "aarch64"}


@contextlib.contextmanager
def aar_file(path: Path, member: str | None, key: str):
    """The AAR a pin names: the downloaded file itself, or its `member` (an npm tarball's),
    copied out to a temporary file."""
    if member is None:
        yield path
        return
    with tempfile.TemporaryFile() as copy, tarfile.open(path, "r:*") as tar:
        found = next((m for m in tar if m.name == member and m.isfile()), None)
        if found is None:
            raise WheelError(f"config key `{key}.member`: {path.name} holds no file {member}")
        shutil.copyfileobj(tar.extractfile(found), copy, CHUNK)
        copy.seek(0)
        yield copy


def library_facts(site: str | Path, pattern: str) -> dict:
    """What the site's libonnxruntime.so carries, read from its bytes."""
    found = sorted(Path(site).glob(pattern))
    if len(found) != 1:
        raise WheelError(f"{site}: expected one {pattern}, found {[p.name for p in found]}")
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
