"""This host's instructions counted by callgrind (devices/callgrind.py), for real: a shared
library whose kernel is written in assembly, so how many instructions of each class it runs
is known from its source (the loop's body times its trip count), runs under valgrind through
the local device's profiler, and the profile must give exactly those counts; the parse must
also add up to the total callgrind itself prints."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mnnrepro.devices import callgrind
from mnnrepro.devices.instruction_mix import x86_instruction_class
from mnnrepro.devices.local import LocalDevice
from mnnrepro.devices.profilers import ProfilerError
from mnnrepro.devices.qemu_blocks import OUTSIDE_PHASES

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("gcc") is None,
    reason="needs valgrind (Debian's valgrind; .ci/run installs it) and gcc",
)

TRIPS = 10_000
# rdi: trip count, rsi: a buffer. Per trip: one int8 multiply-add pair's first half (AVX2's
# int8 GEMM), a vector add, a vector load, a scalar load, two scalar ops, a branch.
KERNEL = r"""
    .text
    .globl kernel
    .type kernel, @function
kernel:
1:  vpmaddubsw %ymm1, %ymm2, %ymm3
    vpaddd %ymm3, %ymm0, %ymm0
    vmovdqu (%rsi), %ymm4
    movq (%rsi), %rax
    addq $1, %rcx
    decq %rdi
    jnz 1b
    vzeroupper
    ret
    .size kernel, .-kernel
    .section .note.GNU-stack,"",@progbits
"""
MAIN = f"""
#include <stdio.h>
void kernel(long trips, const void *buffer);
int main(void) {{ static char buffer[64]; kernel({TRIPS}, buffer); puts("done"); return 0; }}
"""
EXPECTED = {  # the kernel's own instructions, from its source
    "dot_matmul": TRIPS,
    "vector_other": TRIPS + 1,  # vpaddd per trip, vzeroupper once
    "vector_load_store": TRIPS,
    "load_store": TRIPS,
    "scalar_other": 2 * TRIPS,
    "branch": TRIPS + 1,  # jnz per trip, ret once
}

# the runner's `phases` mode, in C: each phase between two markers (a stat of a path that does
# not exist, then getppid: callgrind.MARKER_FUNCTION), after an unmarked warm-up
MARKED_MAIN = f"""
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
void kernel(long trips, const void *buffer);
static void mark(const char *path) {{ struct stat st; stat(path, &st); getppid(); }}
int main(void) {{
  static char buffer[64];
  kernel({TRIPS}, buffer);
  mark("/phase-markers/begin-prefill"); kernel({TRIPS}, buffer); mark("/phase-markers/end-prefill");
  mark("/phase-markers/begin-decode"); kernel({TRIPS // 10}, buffer);
  mark("/phase-markers/end-decode");
  puts("done"); return 0; }}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> tuple[Path, Path]:
    """(the program, its kernel library), built here with gcc."""
    where = tmp_path_factory.mktemp("callgrind")
    (where / "kernel.S").write_text(KERNEL)
    (where / "main.c").write_text(MAIN)
    library = where / "libkernel.so"
    subprocess.run(["gcc", "-shared", "-o", library, where / "kernel.S"], check=True)
    (where / "marked.c").write_text(MARKED_MAIN)
    for name in ("main", "marked"):
        subprocess.run(
            [
                "gcc",
                "-O1",
                "-o",
                where / name,
                where / f"{name}.c",
                f"-L{where}",
                "-lkernel",
                f"-Wl,-rpath,{where}",
            ],
            check=True,
        )
    return where / "main", library


@pytest.mark.slow
@needs_valgrind
def test_the_kernels_count_is_what_its_source_says(program):
    binary, library = program
    device = LocalDevice("host", profiler=callgrind.PROFILER)
    assert device.profile_counts  # a counted profile is kept apart from a sampled one
    result, profile = device.profile([str(binary)], 120, None, {library.name: str(library)}, 0)
    assert result.ok and result.stdout.strip() == "done"
    assert profile["profiler"] == "valgrind --tool=callgrind" and profile["unit"] == "instructions"
    (row,) = [r for r in profile["rows"] if r["symbol"] == "kernel"]
    assert row["dso"] == "libkernel.so" and row["unlogged_blocks"] == 0
    assert {c: n for c, n in row["instructions"].items() if n} == EXPECTED
    assert row["count"] == sum(EXPECTED.values())
    # the rest of the process (the loader, libc, main) is one row, not classed
    (outside,) = [r for r in profile["rows"] if r["dso"] == callgrind.OUTSIDE]
    assert "instructions" not in outside and outside["count"] > 0
    # every instruction callgrind counted is in the profile once: its own total
    text = Path(device.scratch("callgrind.out")).read_text()
    (summary,) = re.findall(r"^summary: (\d+)$", text, re.M)
    assert profile["total"] == int(summary)


@pytest.mark.slow
@needs_valgrind
def test_a_calls_inclusive_cost_is_not_counted_again(program):
    """`calls=` is followed by the callee's inclusive cost at the call site: counted as the
    caller's own, main's instructions would hold the whole kernel's again."""
    binary, library = program
    device = LocalDevice("host", profiler=callgrind.PROFILER)
    device.profile([str(binary)], 120, None, {library.name: str(library)}, 0)
    with open(device.scratch("callgrind.out")) as lines:
        costs = callgrind.parse_callgrind(lines)
    (main,) = [n for (obj, fn), n in costs.items() if fn == "main" and obj.endswith("/main")]
    assert sum(main.values()) < 100  # a handful of instructions of its own


@pytest.mark.slow
@needs_valgrind
def test_a_process_marking_its_phases_is_counted_phase_by_phase(program):
    """One run, each phase's instructions apart (callgrind_phases): the kernel's count in
    each is what the program's source gives it, the warm-up's in neither."""
    binary, library = program
    device = LocalDevice("host", profiler=callgrind.PROFILER)
    assert device.marks_phases
    result, segments = device.profile_phases(
        [str(binary.with_name("marked"))],
        120,
        None,
        {library.name: str(library)},
        0,
        "/phase-markers",
        ["prefill", "decode"],
    )
    assert result.ok and result.stdout.strip() == "done"
    for phase, trips in (("prefill", TRIPS), ("decode", TRIPS // 10)):
        (row,) = [r for r in segments[phase]["rows"] if r["symbol"] == "kernel"]
        assert row["instructions"]["dot_matmul"] == trips, phase
    (warm_up,) = [r for r in segments[OUTSIDE_PHASES]["rows"] if r["symbol"] == "kernel"]
    assert warm_up["instructions"]["dot_matmul"] == TRIPS
    # a process that marks fewer phases than asked: refused, not counted in the wrong phase
    with pytest.raises(ProfilerError, match="marked 4 times under callgrind"):
        device.profile_phases(
            [str(binary.with_name("marked"))],
            120,
            None,
            {library.name: str(library)},
            0,
            "/phase-markers",
            ["prefill", "decode", "startup"],
        )


def test_x86_instructions_get_the_class_that_decides_their_time():
    assert x86_instruction_class("vpdpbusd", "%zmm1,%zmm2,%zmm3") == "dot_matmul"
    assert x86_instruction_class("vpmaddwd", "(%rax),%ymm2,%ymm3") == "dot_matmul"
    assert x86_instruction_class("vfmadd231ps", "(%rsi),%ymm4,%ymm0") == "vector_other"
    assert x86_instruction_class("vmovups", "%ymm0,0x20(%rdi)") == "vector_load_store"
    assert x86_instruction_class("vbroadcastss", "(%rdi),%ymm4") == "vector_load_store"
    assert x86_instruction_class("vmovaps", "%ymm0,%ymm1") == "vector_other"  # no memory
    assert x86_instruction_class("rep stos", "%rax,%es:(%rdi)") == "load_store"
    assert x86_instruction_class("push", "%rbp") == "load_store"
    assert x86_instruction_class("lea", "0x8(%rsp),%rax") == "scalar_other"  # no access
    assert x86_instruction_class("notrack jmp", "*%rax") == "branch"
    assert x86_instruction_class("cmpq", "$0x0,(%rax)") == "scalar_other"


def test_a_missing_valgrind_fails_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    device = LocalDevice("host", profiler=callgrind.PROFILER)
    with pytest.raises(ProfilerError, match="needs `valgrind`"):
        device.profile(["true"], 10, None, {}, 0)
