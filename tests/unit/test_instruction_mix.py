"""The instruction mix of a QEMU counting run (devices/instruction_mix.py): each translated
block's instructions classed once, times the block's executions, per function.

tests/data/qemu/in_asm-kleidiai-sme2.log holds three blocks of a real QEMU 11.1.3 log
(`-d in_asm,exec,nochain`, ort_genai_tool's greedy run on `max,sve512=on,sme512=on`, in
onnxruntime 1.32.0's aarch64 libonnxruntime.so), cut from two places of it with their `Trace`
lines: a call into KleidiAI's SME2 GEMM, its entry up to SMSTART, and its inner loop (4 SMOPA
outer products, SME2 multi-vector loads and LUTI4 that QEMU prints as `.byte`), executed 7
times."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from conftest import full_bench

from mnnrepro.devices.instruction_mix import (
    CLASSES,
    block_encodings,
    block_instructions,
    instruction_class,
    translated_blocks,
)
from mnnrepro.devices.qemu_blocks import attribute_blocks, count_exec_log

LOG = Path(__file__).parents[1] / "data" / "qemu" / "in_asm-kleidiai-sme2.log"
LOOP = 0x7FAAC794FA24  # the inner loop's first instruction


def test_each_instruction_gets_the_class_that_decides_its_time():
    assert instruction_class(0xA0884880, "smopa", "za0.s, p2/m, p2/m, z4.b, z8.b") == (
        "sme_outer_product"
    )
    # SME2's multi-vector load and LUTI4, which QEMU's disassembler cannot name
    assert instruction_class(0xA0402160, ".byte", "0x60, 0x21, 0x40, 0xa0") == "sme_other"
    assert instruction_class(0xC08A4008, ".byte", "0x08, 0x40, 0x8a, 0xc0") == "sme_other"
    assert instruction_class(0xD503477F, "smstart", "") == "sme_mode"
    assert instruction_class(0x4E8F9620, "sdot", "v0.4s, v17.16b, v15.16b") == "dot_matmul"
    assert instruction_class(0xA540A144, "ld1w", "{z4.s}, p0/z, [x10]") == "vector_load_store"
    assert instruction_class(0x6D0327E8, "stp", "d8, d9, [sp, #0x30]") == "vector_load_store"
    assert instruction_class(0xA9B753F3, "stp", "x19, x20, [sp, #-0x90]!") == "load_store"
    assert instruction_class(0x54FFFEAC, "b.gt", "#0x7faac794fa24") == "branch"
    assert instruction_class(0x042A502A, "addvl", "x10, x10, #1") == "scalar_other"


def test_a_counting_runs_log_gives_the_instructions_each_function_ran():
    blocks, other = count_exec_log(io.BytesIO(LOG.read_bytes()))
    assert blocks == Counter({"00007faac794c140": 1, "00007faac794f990": 1, "00007faac794fa24": 7})
    translated = translated_blocks(other)
    loop = translated[LOOP]
    assert loop == Counter(
        sme_outer_product=4, sme_other=3, vector_load_store=1, scalar_other=3, branch=1
    )
    assert translated[0x7FAAC794F990]["sme_mode"] == 1  # the entry ends with SMSTART
    assert set(translated) == {0x7FAAC794C140, 0x7FAAC794F990, LOOP}
    # the blocks asked for alone (a counting run classifies those its phases executed)
    assert translated_blocks(other, {LOOP, 0x1000}) == {LOOP: loop}

    # no library mapped: every block is outside the engine's libraries, in one row, and a
    # block with no logged translation is counted as such
    blocks["0000000000001000"] = 5
    (row,) = attribute_blocks(blocks, [], {}, translated)
    assert row["count"] == 14 and row["unlogged_blocks"] == 5
    assert list(row["instructions"]) == list(CLASSES)
    assert row["instructions"]["sme_outer_product"] == 7 * 4
    assert sum(row["instructions"].values()) == 2 + 11 + 7 * 12
    assert "instructions" not in attribute_blocks(blocks, [], {})[0]  # counted blocks only

    # the same instructions by encoding: each once per execution of its block
    words = block_encodings(block_instructions(other))
    assert words[LOOP]["a0884880"] == 1 and sum(words[LOOP].values()) == 12
    (row,) = attribute_blocks(blocks, [], {}, translated, words)
    assert row["encodings"]["a0884880"] == 7  # the loop's first SMOPA, 7 times
    assert row["encodings"]["54fffeac"] == 7 and row["encodings"]["a540a144"] == 7
    assert sum(row["encodings"].values()) == sum(row["instructions"].values())


def test_kernels_csv_and_the_report_carry_the_mix_as_read_back(tmp_path):
    """The mix reaches kernels.csv (ins_* columns, empty for a sampling profiler's rows) and the
    report's table of shares, also when the table is read back as the report reads it."""
    import pandas as pd

    from mnnrepro.analysis.attribution import kernel_table
    from mnnrepro.analysis.kernel_sections import mix_section

    blocks, other = count_exec_log(io.BytesIO(LOG.read_bytes()))
    rows = attribute_blocks(blocks, [], {}, translated_blocks(other))
    qemu = {"device": "qemu", "variant": "on", "phase": "prefill", "rows": rows, "total": 9}
    qemu["libraries"] = ["[outside the engine libraries]"]  # this log maps no library
    perf = {"device": "host", "variant": "on", "phase": "prefill", "total": 1, "libraries": []}
    perf["rows"] = [{"dso": "lib.so", "symbol": "f", "count": 1}]
    table = kernel_table([qemu, perf])
    table.to_csv(tmp_path / "kernels.csv", index=False)
    read_back = pd.read_csv(tmp_path / "kernels.csv", keep_default_na=False)
    assert read_back["ins_sme_outer_product"].tolist() == ["28", ""]  # as the report reads it
    (line,) = [ln for ln in mix_section(read_back) if ln.startswith("| qemu ")]
    # of 97 instructions: 28 outer products, 21 other SME (the loop's 3, 7 times), 1 SMSTART
    assert line.startswith("| qemu |  | on | prefill | 97 | 28.9% | 21.6% | 1.03% |")


def test_a_profile_kept_from_before_the_mix_is_profiled_again_on_qemu_only():
    """A profile is kept when its key matches: QEMU's profiler now also counts instructions,
    so its key says so (an older QEMU profile, without the mix, is profiled again), while a
    sampling profiler's key is unchanged (a phone's profiles are kept)."""
    from conftest import two_variant_specs

    from mnnrepro.devices.local import LocalDevice
    from mnnrepro.devices.qemu import QemuDevice
    from mnnrepro.runs.profile import profile_key
    from mnnrepro.runs.raw_files import measurement_key

    spec = two_variant_specs()["a"]
    bench = full_bench(prompt_tokens=8, generate_tokens=4)
    attribution = {"sample_hz": 999}
    before = {
        "prompt_tokens": 8,
        "generate_tokens": 4,
        "sample_hz": 999,
    }  # what a profile's key held before the mix
    qemu, local = QemuDevice.__new__(QemuDevice), LocalDevice.__new__(LocalDevice)
    assert profile_key(qemu, spec, bench, attribution) != measurement_key(
        spec, {**before, "profiler": "qemu"}
    )
    assert profile_key(local, spec, bench, attribution) == measurement_key(
        spec, {**before, "profiler": "local"}
    )
