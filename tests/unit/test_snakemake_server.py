"""The tests' Snakemake runs (tests/snakemake_server.py, forked from a server that imported
Snakemake once) behave as `python -m snakemake` started anew: the same output and exit code,
the working directory's own code, the request's environment."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import snakemake_server
from snakemake_server import snakemake

SNAKEFILE = """import os
import sys
import helper

print("helper says", helper.WORD, "X is", os.environ.get("X"))
print("imports from", sys.path)


rule all:
    output:
        "out.txt",
    shell:
        "echo $X > {output}"
"""


def workflow(where, word: str):
    where.mkdir()
    (where / "Snakefile").write_text(SNAKEFILE)
    (where / "helper.py").write_text(f"WORD = {word!r}\n")
    return where


@pytest.mark.slow
def test_a_forked_run_prints_and_exits_as_a_new_process(tmp_path):
    where = workflow(tmp_path / "w", "hello")
    for args in (["-n", "--cores", "1"], ["--cores", "1", "no-rule-makes-this.txt"]):
        forked = snakemake(args, where)
        anew = subprocess.run(
            [sys.executable, "-m", "snakemake", *args], cwd=where, capture_output=True, text=True
        )
        assert forked.returncode == anew.returncode
        assert "helper says hello" in forked.stdout + forked.stderr
        # the lines but the run's times and id
        assert lines(forked) == lines(anew), args
    assert snakemake(["--cores", "1", "no-rule-makes-this.txt"], where).returncode == 1


def lines(proc) -> list[str]:
    """The run's lines but its header's date and workflow id and its jobs' timestamps."""
    text = proc.stdout + proc.stderr
    timestamp = re.compile(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\]$")
    return [
        line
        for line in text.splitlines()
        if not (line.lstrip().startswith(("Date:", "Workflow ID:")) or timestamp.match(line))
    ]


def test_each_run_imports_its_own_directorys_code_and_gets_the_requested_environment(tmp_path):
    first, second = workflow(tmp_path / "a", "first"), workflow(tmp_path / "b", "second")
    env = {**__import__("os").environ, "X": "from-the-request"}
    a = snakemake(["--cores", "1"], first, env)
    b = snakemake(["--cores", "1"], second, {**env, "PYTEST_CURRENT_TEST": "another test"})
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert "helper says first" in a.stdout + a.stderr  # not a module left from another run
    assert "helper says second" in b.stdout + b.stderr
    assert (second / "out.txt").read_text() == "from-the-request\n"  # the job's environment
    key = tuple(sorted((k, v) for k, v in env.items() if k != "PYTEST_CURRENT_TEST"))
    assert key in snakemake_server.SERVERS  # one server for both: the test's name aside


def test_a_run_is_forked_with_the_installed_modules_the_runs_before_it_imported(tmp_path):
    """The server imports what a run imported from the interpreter's and the installed
    packages' files (here the standard library's colorsys, which Snakemake does not import),
    never the run's own directory's modules (the test above)."""
    where = tmp_path / "w"
    where.mkdir()
    (where / "Snakefile").write_text(
        'import sys\nprint("colorsys loaded:", "colorsys" in sys.modules)\nimport colorsys\n'
    )
    env = {**__import__("os").environ, "A_SERVER_OF_ITS_OWN": str(tmp_path)}
    first, second = (snakemake(["-n", "--cores", "1"], where, env) for _ in range(2))
    assert "colorsys loaded: False" in first.stdout + first.stderr
    assert "colorsys loaded: True" in second.stdout + second.stderr
