"""README as a user reads it: every link and every repository path it names is a committed
file, and every command it shows for the default experiment runs exactly as written after the
quickstart (in a copy of the repository, so nothing here is touched; the copy's default config
does not wait for a quiet machine, see below)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

DOCS = ["README.md", "benchmarks/README.md", "locks/README.md", "config/README.md"]
TOP = ("benchmarks/", "config/", "workflow/", "tests/", "locks/", "envs/", "profiles/", ".ci/")


def tracked(root) -> set[str]:
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout
    files = set(out.split())
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
    prefixes = TOP if str(base) == "." else (*TOP, "results/")
    for name in sorted(named_paths((root / doc).read_text(), prefixes)):
        candidates = {name, str((base / name).as_posix()).removeprefix("./")}
        if not candidates & files:
            missing.append(name)
    assert missing == [], f"{doc} names files that are not committed: {missing}"


def readme_commands(root) -> list[str]:
    """The snakemake commands of README's 'Useful commands' table, in order."""
    text = (root / "README.md").read_text()
    table = text.split("## Useful commands", 1)[1].split("\n\n", 2)[1]
    return [c for c in re.findall(r"`([^`]+)`", table) if c.startswith("snakemake")]


@pytest.mark.slow
def test_every_readme_command_runs_as_written_after_the_quickstart(root, tmp_path):
    repo = tmp_path / "repo"
    for name in tracked(root):
        src = root / name
        if src.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / name)
    # The copy's default experiment measures the load before each invocation but does not
    # wait for a quiet machine: tests must pass on a busy one (the gate is tested apart).
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["bench"]["quiet_timeout_s"] = 0
    (repo / "config" / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    env_bin = str(__import__("pathlib").Path(sys.executable).parent)

    def run(command: str):
        argv = shlex.split(command)
        if argv[0] == "snakemake":
            argv = [sys.executable, "-m", "snakemake", *argv[1:]]
        proc = subprocess.run(
            argv if "&&" not in command else ["bash", "-c", command],
            cwd=repo,
            capture_output=True,
            text=True,
            env={
                **__import__("os").environ,
                "PATH": f"{env_bin}:{__import__('os').environ['PATH']}",
            },
            check=False,
        )
        assert proc.returncode == 0, f"$ {command}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        return proc

    run("snakemake --cores 4")  # the quickstart
    commands = readme_commands(root)
    assert len(commands) >= 9
    for command in commands:
        run(command)
    assert (repo / "report.html").stat().st_size > 10_000
