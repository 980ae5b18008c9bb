"""ExecuTorch's pinned PyPI wheels, downloaded by sha256 and unpacked:

- an engine's (config `executorch.wheels.<platform>`: host or linux-arm64, the executorch
  wheel alone): its runtime libraries (lib/: the runtime, the XNNPACK delegate, the kernel
  libraries, the thread pool) and its C++ headers (include/), into results/engines/<key>/bin,
  where the gate tool is built against them and from where the libraries are staged on the
  device by hash (only they: the wheel's Python is not run there);
- the exporter (`executorch.exporter`: the host's executorch wheel and the Python packages its
  LLM exporter imports beyond the workflow's own: torchao, omegaconf, pytorch-tokenizers,
  tiktoken, ruamel.yaml) side by side, where the conversion rule's Python finds them.

And what the engine's XNNPACK delegate carries, read from its dynamic symbols: XNNPACK's SME2
micro-kernels and KleidiAI's SME2 kernels it calls (kai_*_sme2_*). An arm64 wheel whose
delegate holds none is refused before use: its pair could only measure NEON against NEON."""

from __future__ import annotations

import platform as host
import re
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.fetch import publish_dir, verified, wheel_name
from mnnrepro.files import file_table
from mnnrepro.unpack import extract_zip_into, extract_zip_members

KIND = "executorch"  # the kind its records carry (kind.ExecutorchEngine.kind)
PACKAGE = "executorch"  # the first wheel of every list of pins
ROOT = "executorch/"  # the package's folder in its wheel
RUNTIME = ("lib/", "include/")  # what an engine's site holds of it (below ROOT)
# the libraries the gate tool links and the device loads (the wheel's others, OpenVINO's and
# QNN's delegates, need SDKs a device does not have)
LIBRARIES = (
    "libexecutorch.so",
    "libexecutorch_backend_xnnpack.so",
    "libexecutorch_kernels_optimized.so",
    "libexecutorch_kernels_quantized.so",
    "libexecutorch_threadpool.so",
)
DELEGATE = "lib/libexecutorch_backend_xnnpack.so"
# an ELF dynamic symbol's name in .dynstr: XNNPACK's SME2 micro-kernels and KleidiAI's
SME2_SYMBOL = re.compile(rb"(?<=\x00)((?:xnn|kai)_[a-z0-9_]*sme2[a-z0-9_]*)(?=\x00)")
EXECUTED = re.compile(r"kai_(run|kernel)_|xnn_.*_ukernel_")
GETTER = re.compile(r"_get_[a-z]+$")
# the machine a platform's wheel must be built for (host: this one's, where the tool is built
# and the exporter runs)
MACHINE = {"linux-arm64": "aarch64", "host": host.machine()}


class WheelError(ReproError, ValueError):
    pass


def wheel_identity(url: str, key: str) -> dict:
    """(package, version, python tag, machine) of a pinned wheel, from its file name."""
    found = wheel_name(url)
    if not found:
        raise WheelError(f"config key `{key}`: {url} is not a wheel's file name")
    return {k: found[k] for k in ("name", "version", "python", "arch")}


def pinned_wheels(pins: list[dict], key: str, cache: Path) -> list[dict]:
    """Every pinned wheel, downloaded unless the cache holds it, verified by sha256; the first
    must be executorch's."""
    wheels = []
    for i, pin in enumerate(pins):
        identity = wheel_identity(pin["url"], f"{key}[{i}]")
        path = verified(pin, f"{key}[{i}]", cache)
        wheels.append({**identity, "file": path.name, "sha256": pin["sha256"], "path": path})
    if not wheels or wheels[0]["name"] != PACKAGE:
        raise WheelError(f"config key `{key}[0]`: expected the {PACKAGE} wheel first")
    return wheels


def for_machine(wheel: dict, machine: str, key: str) -> None:
    """A compiled wheel for another machine than the one that runs it is one line naming key."""
    if wheel["arch"] not in (None, machine):
        raise WheelError(
            f"config key `{key}`: {wheel['file']} is built for {wheel['arch']}, not {machine}"
        )


def fetch_engine(platform: str, pins: list[dict], cache: str | Path, site: str | Path) -> dict:
    """An engine's executorch wheel: its runtime unpacked into site (published whole), and
    its record (wheels.json)."""
    key = f"executorch.wheels.{platform}"
    if len(pins) != 1:
        raise WheelError(f"config key `{key}`: one wheel (executorch's), not {len(pins)}")
    (wheel,) = pinned_wheels(pins, key, Path(cache))
    for_machine(wheel, MACHINE[platform], f"{key}[0]")
    archive = wheel.pop("path")
    with publish_dir(site) as staging:
        for part in RUNTIME:
            extract_zip_members(archive, ROOT + part, staging / part, keep_tree=True)
        missing = [lib for lib in LIBRARIES if not (staging / "lib" / lib).is_file()]
        if missing:
            raise WheelError(f"config key `{key}`: its wheel holds no lib/{', lib/'.join(missing)}")
        kernels = sme2_kernels(staging / DELEGATE)
        if platform != "host" and not kernels:
            raise WheelError(
                f"config key `{key}`: its XNNPACK delegate ({DELEGATE}) holds no SME2 kernel: "
                "its pair could only measure NEON against NEON"
            )
    return {
        "kind": KIND,
        "platform": platform,
        "wheels": [wheel],
        "version": wheel["version"],
        "pin": f"{PACKAGE}=={wheel['version']} ({platform} wheel)",
        "python": wheel["python"],
        "target_arch": wheel["arch"],
        "delegate": {"path": DELEGATE, "sme2_kernels": kernels},
        # what the device runs: the libraries (the headers are the gate tool build's)
        "files": [f for f in file_table(site) if f["path"] in {f"lib/{n}" for n in LIBRARIES}],
    }


def fetch_exporter(pins: list[dict], cache: str | Path, site: str | Path) -> dict:
    """The exporter's wheels, unpacked side by side into site (published whole)."""
    wheels = pinned_wheels(pins, "executorch.exporter", Path(cache))
    for i, wheel in enumerate(wheels):  # the exporter runs here
        for_machine(wheel, MACHINE["host"], f"executorch.exporter[{i}]")
    with publish_dir(site) as staging:
        for wheel in wheels:
            extract_zip_into(wheel.pop("path"), staging)
    return {"wheels": wheels, "version": wheels[0]["version"]}


def sme2_kernels(library: Path) -> list[str]:
    """The SME2 kernels a library's dynamic symbols name, the functions that execute: KleidiAI's
    (kai_run_*, and the kai_kernel_* assembly each calls) and XNNPACK's micro-kernels, not
    their getters (kai_get_*, *_get_mr, ...)."""
    names = {m.decode() for m in SME2_SYMBOL.findall(library.read_bytes())}
    return sorted(n for n in names if EXECUTED.match(n) and not GETTER.search(n))
