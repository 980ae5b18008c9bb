"""What a built engine contains: MNN's own SME2 kernels, found by disassembly, and the check
of an engine's declared expectation (`engines.<name>.build.expect.sme2_kernels`).
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import subprocess
from pathlib import Path

from mnnrepro.toolchain import BuildError

SME2_SYMBOL = re.compile(r"\b\w*sme2\w*\b", re.I)


SME_INSTRUCTIONS = re.compile(
    r"\b(smstart|smstop|fmopa|bfmopa|smopa|umopa|sumopa|usmopa|fmops|smops|umops)\b|"
    r"\bzero\s+\{za",
    re.I,
)


SYMBOL_LABEL = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")


# The disassembler per platform: a host's own objdump cannot decode arm64.
DISASSEMBLERS = {"linux-arm64": "aarch64-linux-gnu-objdump"}


# Each mnemonic SME_INSTRUCTIONS names contains one of these (in lower case): a line without
# any holds no SME instruction, and str.find skips such lines at C speed (an unoptimised x86
# llama.cpp build disassembles to ~3.4 million lines, which a regex per line read in ~22 s).
SME_HINTS = ("mop", "smst", "{za")


def line_starts(text: str, needles: tuple[str, ...]) -> list[int]:
    """The offsets of the lines of text that contain any of needles, in order."""
    starts = set()
    for needle in needles:
        at = text.find(needle)
        while at != -1:
            starts.add(text.rfind("\n", 0, at) + 1)
            end = text.find("\n", at)
            at = -1 if end == -1 else text.find(needle, end)
    return sorted(starts)


def line_at(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start:] if end == -1 else text[start:end]


def scan_disassembly(disassembly: str) -> tuple[dict[str, int], int]:
    """An `objdump -d` listing -> (symbol -> lines with SME instructions in its body, SME
    instructions in the whole listing). A body runs from its label to the next one."""
    if disassembly.isascii():
        candidates = line_starts(disassembly.lower(), SME_HINTS)
    else:  # lower() may change a non-ASCII text's length, and so its offsets: every line
        candidates = [0, *(m.end() for m in re.finditer("\n", disassembly))]
    labels, names = [], []
    for start in line_starts(disassembly, (">:",)):
        label = SYMBOL_LABEL.match(line_at(disassembly, start))
        if label:
            labels.append(start)
            names.append(label.group(1))
    functions, sites = {}, 0
    for start in candidates:
        line = line_at(disassembly, start)
        found = len(SME_INSTRUCTIONS.findall(line))
        sites += found
        at = bisect.bisect_left(labels, start)
        if not found or (at < len(labels) and labels[at] == start) or at == 0:
            continue  # no SME instruction, a label (it executes nothing), or before any label
        functions[names[at - 1]] = functions.get(names[at - 1], 0) + 1
    return functions, sites


def sme2_kernels(engine_dir: str | os.PathLike, nm: str = "nm", objdump: str = "objdump") -> dict:
    """MNN's own SME2 kernels: functions named for SME2 whose bodies execute SME instructions.

    The name alone is not enough: MNN 3.6.1 builds two NEON helpers named for the SME2 tile
    layout (`MNNSumByAxisLForMatmul_A_SME2`, `..._Hp64`) into every arm64 build, SME2 OFF
    included. KleidiAI's own SME micro-kernels (`kai_*`, which MNN_SME2=OFF does not remove)
    are listed apart. Where symbols are stripped only the instruction sites can be counted.
    Both tools must exist: without them no kernel would be found, and "no SME2 kernel in the
    baseline" would pass unchecked.
    """
    for role, tool in (("symbol lister", nm), ("disassembler", objdump)):
        if not shutil.which(tool):
            raise BuildError(
                f"the SME2 kernel check needs the {role} `{tool}`, which is not installed "
                "(binutils for the host; binutils-aarch64-linux-gnu for linux-arm64; the NDK's "
                "llvm tools for Android)"
            )
    symbols, functions, sites = set(), {}, 0
    for path in sorted(Path(engine_dir).iterdir()):
        if not path.is_file():
            continue
        out = subprocess.run(
            [nm, "--defined-only", str(path)], capture_output=True, text=True, check=False
        ).stdout
        out += subprocess.run(
            [nm, "-D", "--defined-only", str(path)], capture_output=True, text=True, check=False
        ).stdout
        symbols.update(SME2_SYMBOL.findall(out))
        dis = subprocess.run(
            [objdump, "-d", str(path)], capture_output=True, text=True, check=False
        ).stdout
        found, instructions = scan_disassembly(dis)
        sites += instructions
        for name, lines in found.items():
            functions[name] = functions.get(name, 0) + lines
    kleidiai = sorted(f for f in functions if f.startswith("kai_"))  # KleidiAI's, not MNN's
    kernels = sorted(symbols & set(functions) - set(kleidiai))
    return {
        "sme2_kernels": kernels,
        "sme2_kernel_count": len(kernels),
        "sme2_named_without_sme": sorted(symbols - set(functions)),
        "kleidiai_sme_functions": kleidiai,
        "sme_instruction_sites": sites,
        "disassembler": objdump,
    }


def disassembly_tools(spec: dict, ndk: dict | None) -> dict:
    """nm/objdump able to read the platform's binaries (the NDK's llvm tools for Android)."""
    tools = {}
    if spec["platform"] in DISASSEMBLERS:
        tools["objdump"] = DISASSEMBLERS[spec["platform"]]
    if spec["platform"] == "android-arm64" and ndk:
        bin_dir = Path(ndk["path"], "toolchains/llvm/prebuilt/linux-x86_64/bin")
        tools = {"nm": str(bin_dir / "llvm-nm"), "objdump": str(bin_dir / "llvm-objdump")}
    return {**tools, **spec.get("tools", {})}


def check_expectation(engine: str, kernels: dict, expect: dict) -> None:
    if "sme2_kernels" not in expect:
        return
    has = kernels["sme2_kernel_count"] > 0
    if has != expect["sme2_kernels"]:
        raise BuildError(
            f"config key `engines.{engine}.build.expect.sme2_kernels` is "
            f"{expect['sme2_kernels']}, but the build has {kernels['sme2_kernel_count']} SME2 "
            f"kernels {kernels['sme2_kernels'][:5]} (functions named for SME2 that contain SME "
            f"instructions; disassembler: {kernels['disassembler'] or 'none found'})"
        )


def can_have_sme2(target_arch: str | None) -> bool:
    """SME2 exists on arm64 only: MNN_SME2=ON builds no SME2 kernel for another architecture
    (None: an architecture not recorded, taken as arm64)."""
    return (target_arch or "aarch64") in ("aarch64", "arm64")
