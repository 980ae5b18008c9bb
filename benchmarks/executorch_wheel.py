"""What ExecuTorch's PyPI wheels hold for a fourth SME2 stack (issue 78): the facts its engine
kind would be built on, read from the pinned wheels themselves.

Usage: python benchmarks/executorch_wheel.py [--workdir DIR]

Downloads ExecuTorch 1.5.1's CPython 3.11 wheels for linux-arm64 and x86-64 from PyPI (sha256
pinned below, verified before use: mnnrepro.fetch), unpacks them (mnnrepro.unpack) and reads,
with binutils (readelf, nm, the arm64 objdump; a missing one fails, naming it):
- XNNPACK's backend library: its SME2 micro-kernels (the strings that name them), the SME
  instructions in its code (ZA-array operands, smstart/smstop), and whether it asks glibc's
  `getauxval` / `__getauxval` (what the SME mask, toolchain/sme_mask, answers);
- the libraries each Python binding loads (DT_NEEDED): whether a runner on the wheel needs
  libtorch on the device;
- the C++ headers and the CMake package the wheel ships: whether a runner can be compiled
  against its libraries without torch.
Writes benchmarks/results/executorch_wheel.{md,json}.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from provenance import write_results  # noqa: E402

from mnnrepro.fetch import download  # noqa: E402
from mnnrepro.unpack import safe_extract_zip  # noqa: E402

PYPI = "https://files.pythonhosted.org/packages"
WHEELS = {  # platform -> (url, sha256): PyPI's files of executorch 1.5.1, cp311, manylinux_2_28
    "linux-arm64": (
        f"{PYPI}/c9/e4/02f092de72be310cfdea4400adc53489322f008b8e60003a77e934b682ce/"
        "executorch-1.5.1-cp311-cp311-manylinux_2_28_aarch64.whl",
        "8ee02348a3ea80ddf770822911ebf78da616b73afce0fbaaa79f23311c88c66a",
    ),
    "x86-64": (
        f"{PYPI}/d3/da/e9b47ab590550d4ecc2b2a447d13e755ade3fa96399d3fa83d9833084c5d/"
        "executorch-1.5.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        "274c28c2fe2b76acb03f9fa381537425c40e0098dcf886baf6d97a1a55ffe300",
    ),
}
BACKEND = "executorch/lib/libexecutorch_backend_xnnpack.so"
BINDINGS = {  # what a runner on the wheel would load
    "LLM runner (Python)": "executorch/extension/llm/runner/_llm_runner.*.so",
    "runtime (Python, _C)": "executorch/extension/pybindings/_C.*.so",
    "XNNPACK backend": BACKEND,
}
TOOLS = {"readelf": "readelf", "nm": "nm", "objdump (arm64)": "aarch64-linux-gnu-objdump"}
ZA_OPERAND = re.compile(r"\bza(\d|[hv]|\b|\[)|\bzt0\b")
SME2_KERNEL = re.compile(r"\w*sme2\w*")


def tool(name: str) -> str:
    path = shutil.which(TOOLS[name])
    if path is None:
        raise SystemExit(f"{TOOLS[name]} not found: needed to read the wheels ({name})")
    return path


def run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def needed(library: Path) -> list[str]:
    dynamic = run(tool("readelf"), "-d", str(library))
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)


def asks_auxval(library: Path) -> list[str]:
    undefined = run(tool("nm"), "-D", "--undefined-only", str(library))
    return sorted({m for m in re.findall(r"\b(_*getauxval)\S*", undefined)})


def sme_instructions(library: Path) -> dict:
    """The arm64 code's instructions that name the ZA array or ZT0 (outer products, ZA loads
    and stores, MOVA, ZERO {ZA}), and the streaming-mode switches."""
    code = run(tool("objdump (arm64)"), "-d", "--no-show-raw-insn", str(library))
    rows = [line.split("\t") for line in code.splitlines() if line.startswith(" ")]
    mnemonics = [(row[1].strip(), row[2] if len(row) > 2 else "") for row in rows if len(row) > 1]
    za = [m for m, operands in mnemonics if ZA_OPERAND.search(operands)]
    switches = [m for m, _ in mnemonics if m in ("smstart", "smstop")]
    return {
        "za_instructions": len(za),
        "za_mnemonics": sorted(set(za)),
        "smstart_smstop": len(switches),
    }


def kernel_names(library: Path) -> list[str]:
    """The SME2 micro-kernels XNNPACK names in the library (its strings and symbols)."""
    text = library.read_bytes().decode("latin-1")
    return sorted(set(SME2_KERNEL.findall(text)))


def wheel_facts(platform: str, workdir: Path) -> dict:
    url, sha256 = WHEELS[platform]
    wheel = download(url, workdir / Path(url).name, sha256)
    tree = workdir / platform
    if not tree.exists():
        safe_extract_zip(wheel, tree)
    bindings = {}
    for what, pattern in BINDINGS.items():
        (library,) = tree.glob(pattern)
        bindings[what] = {"file": str(library.relative_to(tree)), "needs": needed(library)}
    backend = tree / BACKEND
    headers = sorted(tree.glob("executorch/include/**/*.h"))
    facts = {
        "wheel": Path(url).name,
        "sha256": sha256,
        "bindings": bindings,
        "backend_asks": asks_auxval(backend),
        "headers": len(headers),
        "cmake_packages": sorted(str(p.relative_to(tree)) for p in tree.glob("**/*-config.cmake")),
    }
    if platform == "linux-arm64":
        kernels = kernel_names(backend)
        facts |= {"sme2_kernels": kernels, **sme_instructions(backend)}
    return facts


def markdown(facts: dict) -> list[str]:
    arm = facts["linux-arm64"]
    lines = [
        "# ExecuTorch's PyPI wheels: what a fourth SME2 stack would run",
        "",
        "`python benchmarks/executorch_wheel.py`: ExecuTorch 1.5.1's cp311 wheels for linux-arm64 "
        "and x86-64, sha256-pinned downloads from PyPI, read with binutils.",
        "",
        f"- XNNPACK's backend on arm64 (`{BACKEND}`): {len(arm['sme2_kernels'])} SME2 kernel "
        f"names, {arm['za_instructions']} instructions on the ZA array or ZT0 "
        f"({', '.join(arm['za_mnemonics'])}), {arm['smstart_smstop']} smstart/smstop.",
        f"- It asks glibc {', '.join(arm['backend_asks']) or 'nothing'} (linux-arm64), "
        f"{', '.join(facts['x86-64']['backend_asks']) or 'nothing'} (x86-64): the SME mask "
        "(toolchain/sme_mask, which defines both) answers it.",
        "",
        "| platform | binding | file | loads (DT_NEEDED) |",
        "|---|---|---|---|",
    ]
    for platform, of in facts.items():
        for what, binding in of["bindings"].items():
            lines.append(
                f"| {platform} | {what} | `{binding['file']}` | {', '.join(binding['needs'])} |"
            )
    torch_bound = [w for w, b in arm["bindings"].items() if "libtorch.so" in b["needs"]]
    lines += [
        "",
        f"Loading libtorch: {', '.join(torch_bound) or 'none'}; the XNNPACK backend "
        + ("loads it too." if "XNNPACK backend" in torch_bound else "does not: a runner on the")
        + ("" if "XNNPACK backend" in torch_bound else " wheel's C++ libraries needs no torch."),
        "",
        f"C++ headers shipped: {arm['headers']} (arm64); CMake packages: "
        + ", ".join(f"`{p}`" for p in arm["cmake_packages"]),
        "",
        "SME2 kernel names (arm64 backend):",
        "",
        *[f"- `{name}`" for name in arm["sme2_kernels"]],
    ]
    return lines


def in_workdir(description: str, measure):
    """measure(workdir) for `--workdir DIR` (default: a temporary folder, removed after)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workdir", help="where downloads and builds go (default: temporary)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(args.workdir or scratch).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        return measure(workdir)


def main() -> None:
    for name in TOOLS:
        tool(name)
    facts = in_workdir(
        __doc__.split("\n")[0], lambda workdir: {p: wheel_facts(p, workdir) for p in WHEELS}
    )
    write_results("executorch_wheel", facts, markdown(facts))
    print("\n".join(markdown(facts)[:12]))


if __name__ == "__main__":
    main()
