"""README and docs/ as a user reads them: every link and every repository path they name is a
committed file, and every `snakemake` command they show runs as written after the quickstart
(in the session's copy of the repository, `quickstart_repo`, so nothing here is touched).

Commands that need what a test machine lacks run as a dry run (`-n` added: the phone, the
network fetches of the emulated check, a Slurm cluster) or are skipped, saying why (conda, a
local MNN checkout, a placeholder such as `<archive>`). A command that measures again
(`--config remeasure=...`) also runs as a dry run: measuring twice proves nothing the unit test
of re-measurement (tests/unit/test_bench.py) does not, and would double the test time."""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_archive_holds, assert_report, run_snakemake, tracked_files

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    "README.md",
    "benchmarks/README.md",
    "locks/README.md",
    "config/README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
]
TOP = ("benchmarks/", "config/", "workflow/", "tests/", "locks/", "envs/", "profiles/", ".ci/")
TOP += ("docs/",)


def tracked(root) -> set[str]:
    files = set(tracked_files(root))
    dirs = {str(p) for f in files for p in __import__("pathlib").PurePosixPath(f).parents}
    return files | dirs


def named_paths(text: str, prefixes: tuple[str, ...]) -> set[str]:
    links = {m for m in re.findall(r"\]\(([^)#\s]+)", text) if "://" not in m}
    code = {
        m.rstrip("/.,")
        for m in re.findall(r"`([^`\s]+)`", text)
        if m.startswith(prefixes) and not re.search(r"[*<>{}…]", m)
    }
    return links | code


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_and_path_in_the_docs_is_a_committed_file(root, doc):
    files = tracked(root)
    base = (root / doc).parent.relative_to(root)
    missing = []
    # beside a doc in a sub-directory, `results/...` is that directory's (benchmarks/results/)
    prefixes = TOP if str(base) in (".", "docs") else (*TOP, "results/")
    for name in sorted(named_paths((root / doc).read_text(), prefixes)):
        candidates = {name, posixpath.normpath((base / name).as_posix())}
        if not candidates & files:
            missing.append(name)
    assert missing == [], f"{doc} names files that are not committed: {missing}"


LISTING = re.compile(r"<!-- commands-not-run -->\n(.*?)<!-- /commands-not-run -->", re.S)


def documented_commands(root) -> list[str]:
    """Every `snakemake` command of README.md and docs/*.md (code spans and code-block lines,
    comments cut), in order, each once."""
    commands = []
    for doc in ["README.md", *sorted(str(p) for p in (root / "docs").glob("*.md"))]:
        text = LISTING.sub("", (root / doc).read_text())  # not the listing of them below
        spans = re.findall(r"`(snakemake [^`]+)`", text)  # a bare `snakemake` is a name
        blocks = re.findall(r"(?m)^(snakemake .*?)(?:\s+#.*)?$", text)
        for command in [*spans, *blocks]:
            command = command.strip()
            if command not in commands:
                commands.append(command)
    return commands


DRY_RUN_WHY = {
    "config/paper.yaml": "needs the phone, the NDK download and ModelScope",
    "config/emulated-": "fetches QEMU and an arm64 userland from Debian's archive "
    "(tests/workflow/test_emulation_workflow.py runs a smaller experiment on them)",
    "profiles/slurm": "needs a Slurm cluster (tests/workflow/test_slurm.py runs one)",
    "remeasure=": "measures again (tests/unit/test_bench.py tests re-measurement)",
    "--sdm conda": "creates the conda envs (tests/unit/test_envs.py installs them)",
    "config/predict-host.yaml": "callgrind counts the quickstart's model, far slower than the "
    "CPU runs it (tests/workflow/test_workflow.py counts the tiny experiment; "
    "benchmarks/x86_sanity.py runs this config)",
    "config/predict-held-out-llamacpp.yaml": "QEMU counts three models' layers at 1 thread, "
    "2962 s here after its builds (benchmarks/results/held_out.md; benchmarks/held_out.py runs it; "
    "tests/workflow/test_control.py runs llama.cpp's pair on this host)",
}


def not_run_as_written(command: str) -> str | None:
    """Why a documented command does not run as written here ('skip: ...' or 'dry run: ...'),
    or None when it runs as written."""
    if re.search(r"<[^>]+>|my\.yaml", command):
        return "skip: a placeholder the reader fills in"
    if "/path/to/MNN" in command:
        runs = "benchmarks/real_mnn.py and kernel_attribution.py run these configs"
        if "config/predict-held-out.yaml" in command:
            runs = "benchmarks/held_out.py runs this config"
        return f"skip: needs a local MNN checkout ({runs})"
    if " -n" in f" {command}" or command.startswith("snakemake --lint"):
        return None
    for marker, why in DRY_RUN_WHY.items():
        if marker in command:
            return f"dry run: {why}"
    return None


def how_to_run(command: str) -> str:
    """'run', 'dry-run', or 'skip: <why>' on this machine."""
    why = not_run_as_written(command)
    if why is None:
        return "run"
    if "--sdm conda" in command and shutil.which("conda") is None:
        return "skip: needs conda"
    return "dry-run" if why.startswith("dry run") else why


def listing(root) -> str:
    rows = [(c, why) for c in documented_commands(root) if (why := not_run_as_written(c))]
    lines = ["| command | how the tests run it, and why |", "|---|---|"]
    lines += [f"| `{c}` | {why} |" for c, why in rows]
    return "\n".join(lines) + "\n"


def test_every_command_the_tests_do_not_run_as_written_is_listed_with_why(root):
    """docs/development.md lists each documented command the tests only dry-run or skip;
    a new one fails here until it is listed (regenerate the table with the message's text)."""
    found = LISTING.search((root / "docs" / "development.md").read_text())
    assert found, "docs/development.md has no <!-- commands-not-run --> table"
    assert found.group(1) == listing(root), "the table should read:\n" + listing(root)


def test_commands_are_classified_as_intended():
    assert how_to_run("snakemake --cores 4") == "run"
    assert how_to_run("snakemake --cores 4 --configfile config/paper.yaml") == "dry-run"
    assert how_to_run("snakemake --cores 1 --config replay=<archive>").startswith("skip")
    assert how_to_run("snakemake --cores 4 --config remeasure=2026-11-30") == "dry-run"


@pytest.mark.slow
def test_every_documented_command_runs_as_written_after_the_quickstart(quickstart_repo):
    repo = quickstart_repo
    env_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{env_bin}:{os.environ['PATH']}"}

    def run(command: str, dry: bool):
        argv = shlex.split(command)
        if argv[0] == "snakemake" and "&&" not in command:
            # `python -m snakemake`, forked from a server (tests/snakemake_server.py)
            args = [*(["-n"] if dry else []), *argv[1:]]
            proc = run_snakemake(repo, *args, check=False, env=env)
        else:
            argv = argv if "&&" not in command else ["bash", "-c", command]
            proc = subprocess.run(
                argv, cwd=repo, capture_output=True, text=True, env=env, check=False
            )
        assert proc.returncode == 0, f"$ {command}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        return proc

    assert_a_moved_copy_reruns_nothing(repo, env)
    commands = documented_commands(ROOT)
    assert len(commands) >= 15
    ran = {"run": [], "dry-run": [], "skip": []}
    for command in commands:
        how = how_to_run(command)
        ran[how.split(":")[0]].append(command)
        if how.startswith("skip"):
            continue
        proc = run(command, dry=how == "dry-run")
        if "remeasure=" in command:  # the dry run plans the benchmark again, it is not a no-op
            assert "run_bench" in proc.stdout
    assert len(ran["run"]) >= 10 and len(ran["dry-run"]) >= 4
    assert_report(repo / "report.html", "summary.csv", "bench.csv")
    results = repo / "results" / "quickstart"
    # `snakemake --cores 1 archive`: verifies, and holds what the experiment concluded
    assert_archive_holds(
        results / "quickstart-archive.tar.gz", results, "summary.csv", "bench.csv", "summary.md"
    )
    # the README's replay command: the shipped archive of real MNN builds, re-derived
    assert_replays_to_its_own_summary(
        repo / "benchmarks" / "results" / "host-sme2-archive.tar.gz",
        repo / "results" / "replay" / "host-sme2-archive",
    )
    assert_the_store_holds_both_runs(repo, results)


def assert_the_store_holds_both_runs(repo: Path, results: Path) -> None:
    """README's `snakemake --cores 1 store`: the quickstart's archive and the shipped ones in a
    new store, compared (the gains of the two judged runs on the host; every run's checks);
    registering any again adds nothing."""
    import sqlite3

    from mnnrepro.store.__main__ import main

    store = results / "store" / "runs.sqlite"
    compare = (results / "store" / "compare.md").read_text()
    gains, checks = compare.split("## Validity checks")
    assert "| quickstart |" in gains and "| host-sme2 |" in gains
    assert "| engine-tests | qemu-sme2-vl512 |" in checks  # emulated: checks, never a gain
    assert "| engine-tests |" not in gains
    assert (results / "store" / "dashboard.html").stat().st_size > 0
    db = sqlite3.connect(store)
    before = (
        db.execute("SELECT count(*) FROM runs").fetchone()[0],
        db.execute("SELECT count(*) FROM invocations").fetchone()[0],
    )
    db.close()
    assert before[0] == 3
    archives = [
        results / "quickstart-archive.tar.gz",
        repo / "benchmarks/results/host-sme2-archive.tar.gz",
        repo / "benchmarks/results/engine-tests-archive.tar.gz",
    ]
    assert main(["register", str(store), *map(str, archives)]) == 0
    db = sqlite3.connect(store)
    after = (
        db.execute("SELECT count(*) FROM runs").fetchone()[0],
        db.execute("SELECT count(*) FROM invocations").fetchone()[0],
    )
    db.close()
    assert after == before


def assert_a_moved_copy_reruns_nothing(repo: Path, env: dict) -> None:
    """A finished checkout copied elsewhere (`cp -a`, as an evaluator moves one) plans no
    job: no rule names a file by the checkout's absolute path (on a phone, a rerun is another
    push of the model and another hour of benchmarks). Then Snakemake's own rerun triggers on
    that copy: an edit of the adb connection plans nothing of this run; an edit of the
    statistics reruns the summary and what reads it, never a measurement."""
    moved = repo.parent / "moved"
    shutil.copytree(repo, moved, symlinks=True)

    def planned() -> set[str]:
        proc = run_snakemake(moved, "-n", "--cores", "4", "--quiet", "rules", env=env)
        rows = [line.split() for line in proc.stdout.splitlines()]
        return {r[0] for r in rows if len(r) == 2 and r[1].isdigit() and r[0] != "total"}

    def edit(module: str) -> None:
        with open(moved / "workflow/scripts/mnnrepro" / module, "a") as fh:
            fh.write("\n# an edit\n")

    try:
        assert planned() == set()
        edit("devices/adb.py")
        assert planned() == set()
        edit("stats.py")
        again = planned()
        assert "compute_summary" in again, again
        assert not again & {"push_to_device", "run_greedy", "run_bench", "export_mnn_model"}
    finally:
        shutil.rmtree(moved)


def assert_replays_to_its_own_summary(archive: Path, replayed: Path) -> None:
    """benchmarks/results/host-sme2-archive.tar.gz: the host run of the paper's two MNN 3.6.1
    builds (real records), replayed with no engine, model or device: the same tables and
    the same verdicts as the archive holds (each verdict in the report's table, not a phrase
    every summary.md's rule text contains)."""
    import tarfile

    import pandas as pd

    from mnnrepro.analysis.tables import RUNTIME_COLUMNS

    with tarfile.open(archive) as tar:
        shipped = pd.read_csv(tar.extractfile("results/host-sme2/bench.csv"))
        shipped_summary = pd.read_csv(tar.extractfile("results/host-sme2/summary.csv"))
    # the archive predates some columns (energy per token): every column it has is the same,
    # the newer ones are empty for its records; its `runtime` (k=v;k=v) is now one column
    # per setting, with the same values
    table = pd.read_csv(replayed / "bench.csv")
    kept = [c for c in shipped.columns if c != "runtime"]
    pd.testing.assert_frame_equal(table[kept], shipped[kept])
    for row, runtime in zip(table.itertuples(), shipped["runtime"], strict=True):
        settings = dict(item.split("=", 1) for item in runtime.split(";"))
        assert settings and {k: str(getattr(row, k)) for k in settings} == settings
    # the thermal gate's outcome is read from the archived records' own gate: present
    assert table["thermal_cool"].all()
    assert (
        table[[c for c in table if c not in shipped and c not in RUNTIME_COLUMNS]]
        .drop(columns=["power_source", "thermal_cool", "thermal_wait_s"])
        .isna()
        .all()
        .all()
    )
    summary = pd.read_csv(replayed / "summary.csv")
    pd.testing.assert_frame_equal(summary[shipped_summary.columns], shipped_summary)
    lines = (replayed / "summary.md").read_text().splitlines()
    for row in shipped_summary.itertuples():
        head = f"| {row.device} | {row.model} | {row.treatment} vs {row.baseline} | {row.phase} |"
        (line,) = [x for x in lines if x.startswith(head) and x.endswith("** |")]
        assert line.endswith(f"| **{row.verdict}** |"), line
    assert not (replayed / "mechanism.csv").exists()  # no records of it in this archive
