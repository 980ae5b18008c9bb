"""The `slow` marker stays true without a timing: tests/conftest.py's guard fails a test not
marked slow that starts what makes a test slow (docs/development.md's inner loop)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import shared_by_fast_tests, slow_program


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["cmake", "--build", "b"], "cmake"),
        (
            ["/usr/bin/env", "-i", "A=1", "/r/qemu/usr/bin/qemu-aarch64", "-cpu", "max"],
            "qemu-aarch64",
        ),
        (["sh", "-c", "cd b && make -j2"], "make"),  # each command of a shell's line
        (["sh", "-c", "cd b; ls"], None),
        (["sh", "-c", "echo 'unbalanced"], None),  # not a command line a shell would run
        (["sh", "-c", "clang++-16 -O0 a.cc"], "clang++-16"),
        (["aarch64-linux-gnu-gcc", "a.c"], "aarch64-linux-gnu-gcc"),
        (["aarch64-linux-gnu-g++", "--version"], None),  # a compiler asked its version
        (["c++", "--version", "a.cc"], "c++"),
        (["cmake", "--version"], "cmake"),
        ([sys.executable, "-m", "pip", "install", "x"], "pip"),
        ([sys.executable, "-m", "snakemake", "--cores", "2"], "snakemake"),
        ([sys.executable, "-m", "snakemake", "-n"], None),  # a dry run plans, it runs nothing
        (["snakemake", "--lint"], None),
        (["valgrind", "--tool=callgrind", "a"], "valgrind"),
        (["git", "init"], None),
        ([sys.executable, "runner.py", "bench"], None),
    ],
)
def test_what_a_fast_test_may_not_start_is_named(argv, refused):
    assert slow_program(argv) == refused


def test_a_fast_test_that_starts_an_install_fails_naming_it():
    pip = [sys.executable, "-m", "pip", "--version"]
    with pytest.raises(pytest.fail.Exception, match="starts pip: mark it `slow`"):
        subprocess.run(pip, capture_output=True, check=False)
    with shared_by_fast_tests():  # the models' export shared by every test: allowed
        assert subprocess.run(pip, capture_output=True).returncode == 0
