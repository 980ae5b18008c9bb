"""The functions of a stripped arm64 library recovered from what it keeps for itself
(devices/stripped.py), on a library built here with known tables: tests/data/stripped/ holds
two kernel tables of KleidiAI's shape (one whose name is its second slot, after an
unrelocated field), each kernel's run function calling a helper they share and its own
assembly body (no unwind entry; one kernel a converter too), and code after the last body
that nothing names. The
unstripped build says where each function is; the stripped one must name the same."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mnnrepro.devices.elf import read_symbols

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("aarch64-linux-gnu-nm")),
        reason="needs the arm64 cross compiler (.ci/run installs gcc-aarch64-linux-gnu)",
    ),
]

KERNELS = {  # the table's name of each kernel -> its body in bodies.S
    "matmul_a_sme2_mopa": "body_a",
    "matmul_b_sme2_dot": "body_b",
    "matmul_c_neon": "body_c",  # the shifted table's
    "matmul_d_neon": "body_d",
    "matmul_e_sme2_mla": "body_e",  # its run calls a converter too, also the kernel's
}


@pytest.fixture(scope="module")
def library(root, tmp_path_factory):
    """(the stripped library's recovered functions, the unstripped one's symbols: name ->
    (address, size))."""
    where = tmp_path_factory.mktemp("stripped")
    source = root / "tests/data/stripped"
    built, stripped = where / "libk.so", where / "libk-stripped.so"
    flags = ["-O1", "-fPIC", "-shared", "-fvisibility=hidden"]
    sources = [source / "tables.c", source / "bodies.S"]
    subprocess.run(["aarch64-linux-gnu-gcc", *flags, "-o", built, *sources], check=True)
    subprocess.run(["aarch64-linux-gnu-strip", "-o", stripped, built], check=True)
    nm = ["aarch64-linux-gnu-nm", "-S", "--defined-only", built]
    listed = subprocess.run(nm, capture_output=True, text=True, check=True).stdout
    symbols = {}
    for line in listed.splitlines():
        words = line.split()
        if len(words) == 4:
            symbols[words[3]] = (int(words[0], 16), int(words[1], 16))
    return read_symbols(stripped), symbols


def test_each_kernel_is_named_from_its_table_and_its_body_ends_where_its_code_ends(library):
    recovered, symbols = library
    assert not recovered.from_symtab
    for kernel, body in KERNELS.items():
        run = "run_" + body.removeprefix("body_")
        assert recovered.function_at(symbols[run][0]) == f"kai_run_{kernel}", run
        start, size = symbols[body]
        assert recovered.function_at(start) == f"kai_kernel_{kernel}", body
        assert recovered.function_at(start + size - 4) == f"kai_kernel_{kernel}", body
    assert recovered.function_at(symbols["convert_e"][0]) == "kai_kernel_matmul_e_sme2_mla"
    # the last body is followed by code nothing names: it is not the kernel's
    start, size = symbols["body_d"]
    assert symbols["unnamed_after"][0] == start + size
    assert recovered.function_at(symbols["unnamed_after"][0]) is None


def test_a_helper_every_kernel_calls_is_no_kernels_body(library):
    recovered, symbols = library
    assert recovered.function_at(symbols["shared_helper"][0]) is None
    assert recovered.function_at(symbols["dispatch"][0]) == "dispatch"  # exported: .dynsym
