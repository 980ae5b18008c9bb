"""What ran: real profilers and real logs. perf samples a program built here; QEMU's block log
is a real capture (tests/data/qemu/PROVENANCE.md); simpleperf, which cannot run here, is parsed
in the format its documentation shows. The validity check is fed real perf profiles of a
program whose SME2-named kernel runs or not."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import design_of, section

from mnnrepro.analysis.attribution import execution_checks, kernel_table, phase_summary
from mnnrepro.analysis.kernel_sections import change_explained
from mnnrepro.devices import profilers, qemu_blocks
from mnnrepro.devices.elf import read_symbols
from mnnrepro.devices.local import LocalDevice
from mnnrepro.engines.pairs import Pair
from mnnrepro.engines.registry import EngineRecord

QEMU_DATA = Path(__file__).resolve().parents[1] / "data" / "qemu"
needs_perf = pytest.mark.skipif(
    shutil.which("perf") is None,
    reason="needs Linux perf (Debian's linux-perf; .ci/run installs it)",
)

KERNELS = r"""
__attribute__((noinline)) double MNNGemm_SME2_fake(double x) {
  for (long i = 0; i < 60000000; i++) x = x * 1.0000001 + 1e-9;
  return x;
}
__attribute__((noinline)) double neon_path(double x) {
  for (long i = 0; i < 60000000; i++) x = x * 0.9999999 + 1e-9;
  return x;
}
"""
MAIN = r"""
#include <stdio.h>
#include <string.h>
double MNNGemm_SME2_fake(double); double neon_path(double);
int main(int argc, char **argv) {
  double s = neon_path(1.0);
  if (argc > 1 && strcmp(argv[1], "sme") == 0) s += MNNGemm_SME2_fake(1.0);
  printf("%f\n", s);
  return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    """A shared library with an SME2-named kernel and a NEON-named one, and a program that
    runs the first only when asked (`sme`)."""
    where = tmp_path_factory.mktemp("kernels")
    (where / "k.c").write_text(KERNELS)
    (where / "m.c").write_text(MAIN)
    subprocess.run(
        ["gcc", "-O1", "-shared", "-fPIC", "-o", "libkern.so", "k.c"], cwd=where, check=True
    )
    subprocess.run(["gcc", "-O1", "-o", "prog", "m.c", "-L.", "-lkern"], cwd=where, check=True)
    return where


def perf_profile(program: Path, *args: str) -> dict:
    device = LocalDevice("host")
    try:
        result, profile = device.profile(
            [str(program / "prog"), *args],
            120,
            {"LD_LIBRARY_PATH": str(program)},
            {"libkern.so": str(program / "libkern.so")},
            1000,
        )
    finally:
        device.close()
    assert result.ok, result.stderr
    return profile


@pytest.mark.slow
@needs_perf
def test_perf_names_the_functions_a_real_program_ran(program):
    profile = perf_profile(program, "sme")
    assert profile["unit"] == "samples" and profile["total"] > 0
    ours = {r["symbol"]: r["count"] for r in profile["rows"] if r["dso"] == "libkern.so"}
    # both functions ran for about the same CPU time: both carry samples, named
    assert ours.get("MNNGemm_SME2_fake", 0) > 0 and ours.get("neon_path", 0) > 0
    assert None not in ours  # every sample in the library fell in a named function


@pytest.mark.slow
def test_a_missing_profiler_fails_naming_it(program, monkeypatch):
    monkeypatch.setenv("PATH", str(program))  # no perf there
    device = LocalDevice("host")
    try:
        with pytest.raises(profilers.ProfilerError, match="`perf`"):
            device.profile([str(program / "prog")], 60, None, {}, 1000)
    finally:
        device.close()


def build_record(name: str) -> EngineRecord:
    """An MNN build record as build.json holds it: its SME2 kernels, found by disassembly."""
    return EngineRecord.of(
        {
            "engine": name,
            "kind": "build",
            "target_arch": "aarch64",
            "sme2": {"sme2_kernels": ["MNNGemm_SME2_fake"], "sme2_kernel_count": 1},
        }
    )


def profiles_of(program: Path, runs: dict[str, tuple[str, ...]]) -> dict:
    """(variant, phase) -> a real perf profile of the program with that variant's arguments."""
    out = {}
    for variant, args in runs.items():
        for phase in ("prefill", "decode"):
            profile = perf_profile(program, *args)
            out[(variant, phase)] = {
                **profile,
                "device": "host",
                "variant": variant,
                "phase": phase,
                "engine": variant,
                "libraries": ["libkern.so"],
                "sme2_kernels": ["MNNGemm_SME2_fake"],
            }
    return out


ATTRIBUTION = section("attribution", min_sme2_share=0.01, max_unresolved_share=0.2)
VARIANTS = {"off": {"engine": "off"}, "on": {"engine": "on"}}
ENGINES = {"off": build_record("off"), "on": build_record("on")}
# on a device without SME2 the pair is a fallback check (no SME2 kernels expected to run)
COMPARISON = {"baseline": "off", "treatment": "on", "on_non_sme2_device": "fallback-check"}
PAIR = Pair.compared(design_of({"comparison": COMPARISON, "variants": VARIANTS}))[0]


def sme2_check(profiles: dict, facts: dict) -> dict:
    mode = PAIR.mode_on(ENGINES, {"device": "d", **facts})
    checks = execution_checks(profiles, PAIR, ENGINES, mode, ATTRIBUTION)
    return {c["name"].split(" (")[0]: c for c in checks}


@pytest.mark.slow
@needs_perf
def test_the_check_passes_only_when_the_treatment_ran_its_sme2_kernels(program):
    good = profiles_of(program, {"off": (), "on": ("sme",)})
    checks = sme2_check(good, {"sme2": True})
    assert checks["SME2 kernels ran in on, not in off"]["passed"]
    assert checks["kernel profiles resolve to functions"]["passed"]
    # a treatment whose SME2 kernels never ran (the dispatch took the NEON path): invalid
    never = profiles_of(program, {"off": (), "on": ()})
    failed = sme2_check(never, {"sme2": True})["SME2 kernels ran in on, not in off"]
    assert not failed["passed"] and "on prefill: 0 samples in SME2 kernels" in failed["evidence"]
    # a baseline that ran them (an SME2 build labelled OFF): invalid too
    both = profiles_of(program, {"off": ("sme",), "on": ("sme",)})
    assert not sme2_check(both, {"sme2": True})["SME2 kernels ran in on, not in off"]["passed"]
    # on a device without SME2 nothing may run them: the SME2 treatment's profile fails there
    assert not sme2_check(good, {"sme2": False})["SME2 kernels ran in on, not in off"]["passed"]
    assert sme2_check(never, {"sme2": False})["SME2 kernels ran in on, not in off"]["passed"]
    table = phase_summary(kernel_table(list(good.values())))
    on = table[(table["variant"] == "on") & (table["phase"] == "prefill")].iloc[0]
    assert 0 < on["sme2_share"] < 1 and on["engine_count"] <= on["total"]


@pytest.mark.slow
@needs_perf
def test_the_change_in_time_is_explained_by_the_kernel_that_stopped_running(program):
    """Real perf profiles: the baseline runs both kernels, the treatment only the NEON one, so
    the whole change in CPU time is the SME2-named kernel's (each kernel's loop is the same
    length, so both variants' counts differ by about half the baseline's)."""
    profiles = profiles_of(program, {"slow": ("sme",), "fast": ()})
    table = kernel_table(list(profiles.values()))
    changes = change_explained(table, [("slow", "fast")], top=6).set_index("phase")
    prefill = changes.loc["prefill"]
    assert prefill["change"] > 0 and prefill["unit"] == "samples"
    assert 0.7 < prefill["explained_share"] < 1.3, prefill.to_dict()
    # blocks counted under QEMU are not time: no share is claimed for them
    blocks = change_explained(table.assign(unit="blocks"), [("slow", "fast")], top=6)
    assert blocks["explained_share"].isna().all()
    # a pair with a variant that has no profile is left out, not guessed
    assert change_explained(table, [("slow", "absent")], top=6).empty


@pytest.mark.slow
def test_unresolved_samples_fail_naming_the_library(program):
    profile = {
        "rows": [
            {"dso": "libMNN.so", "symbol": None, "count": 30},
            {"dso": "libMNN.so", "symbol": "MNNGemm_SME2_fake", "count": 70},
        ],
        "total": 100,
        "libraries": ["libMNN.so"],
        "sme2_kernels": ["MNNGemm_SME2_fake"],
        "unit": "samples",
    }
    profiles = {(v, p): profile for v in ("off", "on") for p in ("prefill", "decode")}
    check = sme2_check(profiles, {"sme2": True})["kernel profiles resolve to functions"]
    assert not check["passed"] and "libMNN.so has 30% of its samples outside" in check["evidence"]


def test_perf_report_rows_and_unresolved_symbols():
    text = (
        "   319;libh.so;[.] MNNGemm_SME2_fake\n"
        "     1;[kernel.kallsyms];[k] finish_task_switch.isra.0\n"
        "     5;libMNN.so;[.] 0x000000000012abcd\n"
    )
    rows = profilers.parse_perf_report(text)
    assert rows == [
        {"dso": "libh.so", "symbol": "MNNGemm_SME2_fake", "count": 319},
        {"dso": "[kernel.kallsyms]", "symbol": "finish_task_switch.isra.0", "count": 1},
        {"dso": "libMNN.so", "symbol": None, "count": 5},
    ]


SIMPLEPERF_REPORT = """\
Cmdline: /system/bin/simpleperf record -e cpu-clock -f 1000 -o perf.data -- ./llm_bench
Arch: arm64
Event: cpu-clock (type 1, config 0)
Samples: 1530
Event count: 1530000000

Overhead  Sample  Shared Object                      Symbol
61.05%    934     /data/local/tmp/mnn/on/libMNN.so  MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16
20.00%    306     /data/local/tmp/mnn/on/libMNN.so  0x3a5f10
5.00%     77      [kernel.kallsyms]                  el0_svc_common
"""


def test_simpleperf_report_in_its_documented_format():
    rows = profilers.parse_simpleperf_report(SIMPLEPERF_REPORT)
    assert rows[0] == {
        "dso": "libMNN.so",
        "symbol": "MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16",
        "count": 934,
    }
    assert rows[1]["symbol"] is None and rows[2]["dso"] == "[kernel.kallsyms]"
    with pytest.raises(profilers.ProfilerError, match="no table"):
        profilers.parse_simpleperf_report("simpleperf: command not found\n")


def test_simpleperf_command_is_quoted_on_the_phone(loopback_phone):
    """The phone path's command line goes through the same quoting as llm_bench's: a word with
    spaces and quotes reaches the profiled program as one argument."""
    from mnnrepro.devices.adb import AdbDevice

    device = AdbDevice("phone", loopback_phone[1])
    try:
        # a stand-in for simpleperf that runs what follows `--`, as `simpleperf record` does
        stand_in = device.scratch("simpleperf")
        device.put_text('#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done; shift; "$@"\n', stand_in)
        device.run(["chmod", "+x", stand_in], 60)
        argv = profilers.simpleperf_record_command(
            stand_in, ["printf", "%s|", "it's a prompt", "$HOME"], "perf.data", 1000
        )
        result = device.run(argv, 60)
        assert result.ok and result.stdout == "it's a prompt|$HOME|"
    finally:
        device.close()


def test_qemu_blocks_are_placed_in_the_functions_that_executed_them():
    """A real QEMU 11 log: libk.so mapped by the loader (strace), its blocks counted."""
    with open(QEMU_DATA / "exec-strace-libk.log", "rb") as fh:
        blocks, strace = qemu_blocks.count_exec_log(fh, chunk=4096)  # lines across chunks
    maps = qemu_blocks.exec_mappings("\n".join(strace), {"libk.so"})
    assert [(m["start"], m["offset"]) for m in maps] == [(0x555DB0000, 0)]
    assert qemu_blocks.dfilter(maps) == "0x555db0000+0x20020"
    rows = qemu_blocks.attribute_blocks(blocks, maps, {"libk.so": str(QEMU_DATA / "libk.so")})
    counts = {r["symbol"]: r["count"] for r in rows}
    # main's loop ran twice here: kern_sme's 1000-iteration loop, kern_neon's 10-iteration
    assert counts["kern_sme"] >= 2000 and 20 <= counts["kern_neon"] < 40
    assert sum(counts.values()) == sum(blocks.values())


def test_a_process_marking_its_phases_is_counted_phase_by_phase():
    """A real QEMU 11 log of a program that marks two phases as the runner's `phases` mode
    does (tests/data/qemu/PROVENANCE.md): each phase's blocks apart, the rest outside."""
    marker = qemu_blocks.phase_marker("/phase-markers")
    text = (QEMU_DATA / "exec-strace-marked-phases.log").read_bytes()
    segments, unplaced, strace = qemu_blocks.count_exec_segments(io.BytesIO(text), 4096, marker)
    assert set(segments) == {"prefill", "decode"}
    maps = qemu_blocks.exec_mappings("\n".join(strace), {"libk.so"})
    libraries = {"libk.so": str(QEMU_DATA / "libk.so")}

    def counts(phase):
        rows = qemu_blocks.attribute_blocks(segments[phase], maps, libraries)
        return {r["symbol"]: r["count"] for r in rows}

    # the prefill called kern_sme once (1,000 iterations), the decode kern_neon twice
    assert counts("prefill")["kern_sme"] >= 1000 and "kern_neon" not in counts("prefill")
    assert 20 <= counts("decode")["kern_neon"] < 40 and "kern_sme" not in counts("decode")
    # every block is in one segment or counted outside them (the warm-up: one call of each,
    # the load and the exit): the markers split, lose nothing
    whole, _ = qemu_blocks.count_exec_log(io.BytesIO(text))
    assert unplaced + sum(sum(c.values()) for c in segments.values()) == sum(whole.values())
    assert unplaced >= 1000 + 10
    # a marker out of order (a phase ended that never began) is refused, naming the phases
    swapped = text.replace(b"end-decode", b"end-prefill")
    with pytest.raises(profilers.ProfilerError, match="end of prefill inside decode"):
        qemu_blocks.count_exec_segments(io.BytesIO(swapped), marker=marker)


def test_a_log_read_while_it_is_written_is_read_whole_and_freed_behind_the_reader(tmp_path):
    """QEMU's log is read from its file as QEMU writes it (qemu_blocks.GrowingFile): here a
    writer that writes a line at a time, as QEMU does, and pauses; every byte is read once, in
    order, and the part read is given back to the file system as the reading goes."""
    path = tmp_path / "log"
    path.touch()
    lines = [f"Trace 0: 0x{i:x} [{i:08x}/{i:016x}/0/0]\n".encode() for i in range(100_000)]
    written = threading.Event()

    def write():
        with open(path, "ab", buffering=0) as out:
            for i, line in enumerate(lines):
                out.write(line)
                if i % 25_000 == 0:
                    time.sleep(0.1)  # the reader finds the file's end before QEMU's
        written.set()

    with open(path, "r+b", buffering=0) as fh:
        stream = qemu_blocks.GrowingFile(fh, written)
        writer = threading.Thread(target=write)
        writer.start()
        read = b"".join(iter(lambda: stream.read(1 << 20), b""))
        writer.join()
    assert read == b"".join(lines)
    assert os.stat(path).st_size == len(read)
    if not punches_holes(tmp_path):
        pytest.skip(f"the file system of {tmp_path} cannot punch holes (fallocate)")
    assert os.stat(path).st_blocks * 512 < len(read) // 10  # its holes: freed on disk


def punches_holes(folder: Path) -> bool:
    """A hole punched in a new file there frees its blocks."""
    probe = folder / "probe"
    probe.write_bytes(b"x" * (1 << 20))
    with open(probe, "r+b") as fh:
        qemu_blocks.punch_hole(fh.fileno(), 0, 1 << 20)
    return os.stat(probe).st_blocks * 512 < 1 << 19


def test_elf_symbols_and_segments_of_an_arm64_library():
    elf = read_symbols(QEMU_DATA / "libk.so")
    assert elf.from_symtab
    start = elf.starts[elf.names.index("kern_sme")]
    assert elf.function_at(start) == "kern_sme" and elf.function_at(start + 4) == "kern_sme"
    assert elf.address_of_offset(start) == start  # one segment at offset 0, address 0


def test_a_vector_length_the_sme2_kernels_were_not_written_for_is_flagged():
    from mnnrepro.analysis.validity import vector_length_check

    treat = build_record("on")
    facts = {"device": "q", "sme2": True}
    assert not vector_length_check(("off", "on"), treat, {**facts, "sme_vector_length_bits": 256})[
        0
    ]["passed"]
    assert vector_length_check(("off", "on"), treat, {**facts, "sme_vector_length_bits": 512})[0][
        "passed"
    ]
    # a phone's kernel default, in bytes
    check = vector_length_check(
        ("off", "on"), treat, {**facts, "sme_default_vector_length_bytes": 32}
    )
    assert not check[0]["passed"] and "256 bits" in check[0]["evidence"]
    assert vector_length_check(("off", "on"), treat, {"device": "q", "sme2": False}) == []
    # an engine that declines SME2 at that length (the vector-length patch) does not run them
    at_256 = {**facts, "sme_vector_length_bits": 256}
    declined = "The device supports: i8sdot:1, fp16:1, i8mm: 1, sve2: 1, sme2: 0"
    (check,) = vector_length_check(("off", "on"), treat, at_256, declined)
    assert check["passed"] and "declined SME2" in check["evidence"]
    used = declined.replace("sme2: 0", "sme2: 1")
    assert not vector_length_check(("off", "on"), treat, at_256, used)[0]["passed"]


def test_a_phone_without_simpleperf_fails_naming_it(loopback_phone):
    from mnnrepro.devices.adb import AdbDevice

    device = AdbDevice("phone", loopback_phone[1])
    try:
        with pytest.raises(profilers.ProfilerError, match=r"`simpleperf`.*adb\.simpleperf"):
            device.profile(["true"], 60, None, {}, 1000)
    finally:
        device.close()


def counted_profile(variant: str, sme2_blocks: int) -> dict:
    """A QEMU profile as runs/profile.py writes it: executed blocks per function."""
    rows = [{"dso": "libkern.so", "symbol": "neon_path", "count": 100_000}]
    if sme2_blocks:
        rows.append({"dso": "libkern.so", "symbol": "MNNGemm_SME2_fake", "count": sme2_blocks})
    return {
        "rows": rows,
        "total": sum(r["count"] for r in rows),
        "unit": "blocks",
        "profiler": "qemu -d exec,nochain",
        "libraries": ["libkern.so"],
        "sme2_kernels": ["MNNGemm_SME2_fake"],
    }


COUNTED = replace(ATTRIBUTION, min_sme2_blocks=1)  # QEMU's profiles: executed blocks


def kernels_ran(profiles: dict, facts: dict) -> dict:
    """The pair (off, on)'s check "SME2 kernels ran ...", judged on executed blocks."""
    mode = PAIR.mode_on(ENGINES, {"device": "d", **facts})
    checks = execution_checks(profiles, PAIR, ENGINES, mode, COUNTED)
    return next(c for c in checks if c["name"].startswith("SME2 kernels ran"))


def test_executed_blocks_prove_execution_where_a_share_of_blocks_would_not():
    """Under QEMU a kernel that does the work in few, large blocks is a tiny share of the
    blocks: a count decides there (`min_sme2_blocks`), a share only for CPU-time samples."""
    ran = {("off", p): counted_profile("off", 0) for p in ("prefill", "decode")} | {
        ("on", p): counted_profile("on", 70) for p in ("prefill", "decode")
    }
    check = kernels_ran(ran, {"sme2": True})
    assert check["passed"], check["evidence"]  # 70 of 100,070 blocks: 0.07 %, and it ran
    never = ran | {("on", p): counted_profile("on", 0) for p in ("prefill", "decode")}
    check = kernels_ran(never, {"sme2": True})
    assert not check["passed"] and ">= 1 executed blocks in prefill" in check["evidence"]


def test_a_pair_that_switches_something_else_is_not_checked_for_sme2_kernels():
    """One SME2 build at two settings (`switches: other`): both run its SME2 kernels, which
    says nothing about the pair, so only the check that the profiles resolve to functions is
    made; the same profiles under an SME2 pair fail (the baseline ran SME2 kernels)."""
    both = {(v, p): counted_profile(v, 70) for v in ("off", "on") for p in ("prefill", "decode")}
    other = Pair.compared(
        design_of({"comparison": {**COMPARISON, "switches": "other"}, "variants": VARIANTS})
    )[0]
    mode = other.mode_on(ENGINES, {"device": "d", "sme2": True})
    checks = execution_checks(both, other, ENGINES, mode, COUNTED)
    assert mode == "claim" and [c["name"].split(" (")[0] for c in checks] == [
        "kernel profiles resolve to functions"
    ], checks
    assert not kernels_ran(both, {"sme2": True})["passed"]


def test_a_baseline_that_ran_sme2_kernels_in_its_image_questions_is_caught():
    """The image questions' profile (the vision phase) is judged with prefill and decode: an
    SME2 kernel executed there by the baseline fails the pair, and its count is shown."""
    phases = ("prefill", "decode", "vision")
    clean = {("off", p): counted_profile("off", 0) for p in phases} | {
        ("on", p): counted_profile("on", 70) for p in phases
    }
    check = kernels_ran(clean, {"sme2": True})
    assert check["passed"] and "on vision: 70 blocks in SME2 kernels" in check["evidence"]
    leaked = clean | {("off", "vision"): counted_profile("off", 5)}
    check = kernels_ran(leaked, {"sme2": True})
    assert not check["passed"] and "off vision: 5 blocks in SME2 kernels" in check["evidence"]
    # on a device without SME2 nothing may run them, in the image questions neither
    silent = {(v, p): counted_profile(v, 0) for v in ("off", "on") for p in phases}
    assert kernels_ran(silent, {})["passed"] is True
    assert (
        kernels_ran(silent | {("on", "vision"): leaked[("off", "vision")]}, {})["passed"] is False
    )


class ReplayedQemu:
    """QEMU's runs replayed from a real capture (tests/data/qemu/exec-strace-libk.log, a run
    that mapped libk.so at 0x555db0000): which runs QemuDevice.profile makes, and when it
    reuses a mapping, without the emulator, which unit tests do not fetch (the emulated
    workflow test, tests/workflow/test_emulation_workflow.py, profiles under the real one).
    `moved`: the runs (counted from 1) in which the library lands elsewhere."""

    def __init__(self, tmp_path, moved=()):
        from mnnrepro.devices.qemu import QemuDevice

        receipt = tmp_path / "userland.json"
        receipt.write_text('{"python": "/usr/bin/python3", "qemu": "qemu-aarch64", "sysroot": "/"}')
        self.device = QemuDevice("qemu-x", {"cpu": "max", "userland": str(receipt)})
        self.device.run = self.run
        self.moved, self.runs = set(moved), []

    def run(self, argv, timeout, env=None, qemu_options=()):
        from mnnrepro.devices.base import CommandResult

        self.runs.append("count" if "exec,nochain" in " ".join(qemu_options) else "maps")
        text = (QEMU_DATA / "exec-strace-libk.log").read_text(encoding="utf-8")
        if len(self.runs) in self.moved:
            text = text.replace("0x0000000555db0000", "0x0000000556db0000")
        with open(qemu_options[list(qemu_options).index("-D") + 1], "w", encoding="utf-8") as fh:
            fh.write(text)
        return CommandResult(argv, 0, "", "", 0.1)


def test_qemu_profiles_of_the_same_libraries_reuse_the_mapping_and_check_it(tmp_path):
    libraries = {"libk.so": str(QEMU_DATA / "libk.so")}
    qemu = ReplayedQemu(tmp_path)
    first = qemu.device.profile(["./prog"], 60, None, libraries, 1000)[1]
    second = qemu.device.profile(["./prog"], 60, None, libraries, 1000)[1]
    assert qemu.runs == ["maps", "count", "count"]  # the second invocation ran once
    assert first == second and first["rows"]
    # the library mapped elsewhere in the counting run: a fresh mapping run, then counted again
    qemu = ReplayedQemu(tmp_path, moved={3})
    qemu.device.profile(["./prog"], 60, None, libraries, 1000)
    again = qemu.device.profile(["./prog"], 60, None, libraries, 1000)[1]
    assert qemu.runs == ["maps", "count", "count", "maps", "count"] and again == first
    # moved between the mapping run and its own counting run: refused
    qemu = ReplayedQemu(tmp_path, moved={2})
    with pytest.raises(profilers.ProfilerError, match="differently in the counting run"):
        qemu.device.profile(["./prog"], 60, None, libraries, 1000)
