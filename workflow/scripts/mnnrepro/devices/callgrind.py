"""Instructions this host executed, counted: `valgrind --tool=callgrind` runs the invocation on
valgrind's own x86-64 CPU and writes how many times each instruction ran (`--dump-instr=yes`:
addresses relative to their object, as objdump prints them), per object and function. Each
executed instruction of the engine's libraries is put in a class (instruction_mix's, by
objdump's disassembly of the same file) and counted per function; the rest of the process
(the interpreter, the C library) is one row of instructions, unclassified.

A count, not a sample: repeatable for the same binary, inputs and environment whatever else
the machine does. valgrind's CPU reports AVX2 but not AVX-512 (CPUID), so an engine that
picks its kernels at run time runs its AVX2 ones here; the profile names the functions that
ran, which says which. Threads run one at a time under valgrind: their counts add up.

The local device's `profiler: callgrind` (devices.<name>.local.profiler) selects it: the
host's own instruction mix, which analysis/prediction.py prices for the host's core as a
check of the method against the host's measured times."""

from __future__ import annotations

import glob
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

from mnnrepro.devices.instruction_mix import CLASSES, X86_PREFIXES, x86_instruction_class
from mnnrepro.devices.profilers import OUTSIDE, ProfilerError, answer, require
from mnnrepro.devices.qemu_blocks import OUTSIDE_PHASES

PROFILER = "callgrind"  # the value of devices.<name>.local.profiler that selects it
VALGRIND_HINT = "valgrind's callgrind: Debian's valgrind package"
OBJDUMP_HINT = "GNU binutils' objdump, to put each counted instruction in its class"
NAMED = re.compile(r"^\((\d+)\)(?: (.*))?$")  # callgrind's name compression: "(id) name"
UNNAMED = re.compile(r"^0x[0-9a-f]+$")  # callgrind's name for code outside any symbol
# callgrind names a function entered again before it returned (recursion, or a loop that
# jumps back to the function's first instruction) `name'2`, `name'3`, ...: the same code
RECURSION = re.compile(r"'\d+$")
# objdump -d: "  1125:\tvfmadd231ps (%rsi,%rax,1),%ymm4,%ymm0" (-w: one line per instruction)
OBJDUMP_LINE = re.compile(r"^\s*([0-9a-f]+):\t(.*)$")


# the Python runner's `phases` mode calls it at each marker: callgrind dumps what ran since
# the dump before (`--dump-before`), so each phase is a part of its own (callgrind_phases)
MARKER_FUNCTION = "getppid"


def callgrind_command(valgrind: str, argv: list[str], out: str, dump_before: str = "") -> list:
    return [
        valgrind,
        "--tool=callgrind",
        "--dump-instr=yes",
        "--dump-line=no",
        "--demangle=no",
        *([f"--dump-before={dump_before}"] if dump_before else []),
        f"--callgrind-out-file={out}",
        *argv,
    ]


def parse_callgrind(lines) -> dict[tuple[str, str], Counter]:
    """A callgrind output file (`--dump-instr=yes --dump-line=no`) -> (object, function) ->
    executions per instruction address (the function's own, not its callees': the cost line
    after `calls=` is the call's inclusive cost and is skipped; a recursion level's counts
    are its function's)."""
    names: dict[str, dict[str, str]] = {"ob": {}, "fn": {}}
    current = {"ob": "", "fn": ""}
    costs: dict[tuple[str, str], Counter] = {}
    position, skip_next = 0, False
    for line in lines:
        line = line.rstrip("\n")
        key, sep, value = line.partition("=")
        if sep and key in ("ob", "fn", "cob", "cfn"):
            kind = key[-2:]
            found = NAMED.match(value)
            name = value if found is None else (found[2] or names[kind].get(found[1], ""))
            if found is not None and found[2]:
                names[kind][found[1]] = found[2]
            if key in current:
                current[key] = RECURSION.sub("", name)
            continue
        if sep and key == "calls":
            skip_next = True
            continue
        if not line or not (line[0] in "+-*" or line.startswith("0x") or line[0].isdigit()):
            continue
        fields = line.split()
        at = fields[0]
        if at == "*":
            pass
        elif at[0] in "+-":
            position += int(at, 0)
        else:
            position = int(at, 0)
        if skip_next:
            skip_next = False
            continue
        count = int(fields[1]) if len(fields) > 1 else 0
        costs.setdefault((current["ob"], current["fn"]), Counter())[position] += count
    return costs


def disassembled(path: str, wanted: set[int]) -> dict[int, tuple[str, str]]:
    """The wanted addresses' instructions in an ELF file: address -> (mnemonic with its
    prefixes, operands), streamed from `objdump -d -w` (a large library prints millions of
    lines: only the wanted ones are kept)."""
    objdump = require("objdump", OBJDUMP_HINT)
    out: dict[int, tuple[str, str]] = {}
    command = [objdump, "-d", "-w", "--no-show-raw-insn", path]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, errors="replace") as proc:
        for line in proc.stdout:
            found = OBJDUMP_LINE.match(line)
            if found is None or int(found[1], 16) not in wanted:
                continue
            words = found[2].split("#")[0].split()
            n = 0
            while n < len(words) - 1 and words[n] in X86_PREFIXES:
                n += 1
            out[int(found[1], 16)] = (" ".join(words[: n + 1]), " ".join(words[n + 1 :]))
    if proc.returncode != 0:
        raise ProfilerError(f"objdump -d {path} failed (exit {proc.returncode})")
    return out


def function_rows(
    costs: dict[tuple[str, str], Counter], libraries: dict[str, str], code: dict[str, dict]
) -> list:
    """Profile rows: one per function of the engine's libraries (libraries: basename -> the
    ELF file here) with its instructions by class (code: per library, the instructions it ran,
    disassembled_costs) and, as `unlogged_blocks`, the executions of instructions objdump did
    not print; everything else in one row."""
    rows, outside = [], 0
    by_library: dict[str, list] = {}
    for (obj, fn), per_address in costs.items():
        name = Path(obj).name
        if name in libraries:
            by_library.setdefault(name, []).append((fn, per_address))
        else:
            outside += sum(per_address.values())
    for name, functions in by_library.items():
        instructions = code[name]
        for fn, per_address in functions:
            mix, unknown = Counter(), 0
            for address, n in per_address.items():
                if address in instructions:
                    mix[x86_instruction_class(*instructions[address])] += n
                else:
                    unknown += n
            symbol = None if UNNAMED.match(fn) else fn
            rows.append(
                {
                    "dso": name,
                    "symbol": symbol,
                    "count": sum(per_address.values()),
                    "unlogged_blocks": unknown,
                    "instructions": {c: mix[c] for c in CLASSES},
                }
            )
    if outside:
        rows.append({"dso": OUTSIDE, "symbol": None, "count": outside})
    return sorted(rows, key=lambda r: -r["count"])


def callgrind_profile(
    device, argv: list[str], timeout: float, env: dict | None, libraries: dict[str, str]
):
    """(the run's result, its profile): argv run under callgrind on this host."""
    result, segments = callgrind_phases(device, argv, timeout, env, libraries, None)
    return result, segments.get(OUTSIDE_PHASES, {})


def callgrind_phases(
    device,
    argv: list[str],
    timeout: float,
    env: dict | None,
    libraries: dict[str, str],
    phases: list[str] | None,
):
    """callgrind_profile's counts of a process that marks each phase's begin and end by a
    call of MARKER_FUNCTION (the runner's `phases` mode): callgrind writes part k of the
    profile before the k-th call, so phase j is part 2j + 2; (result, phase -> profile, and
    OUTSIDE_PHASES: the load, the warm-up and the exit, every other part). phases None: an
    unmarked process, all of it under OUTSIDE_PHASES."""
    valgrind = require("valgrind", VALGRIND_HINT)
    out = device.scratch("callgrind.out")
    for stale in glob.glob(f"{glob.escape(out)}.*"):  # parts of an earlier run
        os.remove(stale)
    command = callgrind_command(valgrind, argv, out, MARKER_FUNCTION if phases else "")
    result = device.run(argv, timeout, env, command)
    if not result.ok:
        return result, {}
    parts = sorted(glob.glob(f"{glob.escape(out)}.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    if len(parts) != 2 * len(phases or ()):
        raise ProfilerError(
            f"the profiled process marked {len(parts)} times under callgrind, not twice for each "
            f"of its phases ({', '.join(phases or ())}): a phase's counts cannot be told apart"
        )
    costs = {}
    for k, path in enumerate([*parts, out]):
        segment = phases[k // 2] if phases and k % 2 else OUTSIDE_PHASES
        with open(path, encoding="utf-8", errors="replace") as lines:
            for key, per_address in parse_callgrind(lines).items():
                costs.setdefault(segment, {}).setdefault(key, Counter()).update(per_address)
    code = disassembled_costs(costs.values(), libraries)  # objdump once per library
    profiler = "valgrind --tool=callgrind"
    return result, {
        name: answer(profiler, "instructions", function_rows(by_function, libraries, code))
        for name, by_function in costs.items()
    }


def disassembled_costs(costs, libraries: dict[str, str]) -> dict[str, dict]:
    """Per library (basename -> the ELF file here), the instructions at every address that any
    of costs (parse_callgrind's) executed in it, disassembled."""
    wanted: dict[str, set] = {name: set() for name in libraries}
    for by_function in costs:
        for (obj, _fn), per_address in by_function.items():
            if Path(obj).name in wanted:
                wanted[Path(obj).name].update(per_address)
    return {name: disassembled(libraries[name], addresses) for name, addresses in wanted.items()}
