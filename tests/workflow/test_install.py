"""The README's install as a stranger runs it: public indexes only, a fresh virtual environment.

pip's configuration files, its cache and any local wheel directory are switched off for these
installs (this machine's pip is set up with local mirrors; a user's is not). PyTorch's CPU
wheel index, which the Python 3.11 lock names for torch's CPU build, cannot be reached from
here: `tests/loopback_index.py` serves the lock's own torch wheel on loopback, added through
pip's own PIP_EXTRA_INDEX_URL (the hash decides what is accepted, from any index)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import copy_repository, pypi_reachable
from loopback_index import index_problems, public_pip_env, torch_wheel, wheel_index

ARCHIVE = "benchmarks/results/host-sme2-archive.tar.gz"


def system_python() -> str:
    """A Python 3.11-3.13 that is not this test run's venv: Debian's own (externally managed,
    PEP 668) where it exists, so the install must make its own venv."""
    for candidate in ("/usr/bin/python3", "/usr/bin/python3.11"):
        if Path(candidate).exists():
            version = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2] >= (3, 11))"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            if version == "True":
                return candidate
    return str(Path(sys.base_prefix) / "bin" / "python3")


needs_pypi = pytest.mark.skipif(not pypi_reachable(), reason="needs the network (PyPI)")


@pytest.mark.slow
@pytest.mark.network
@needs_pypi
def test_light_install_from_pypi_alone_replays_the_shipped_archive(root, tmp_path):
    """`bash install.sh --light` with the system's Python (a venv of its own), then README's
    replay command in it: the archive's own summary comes out, and nothing of the engine
    (torch, transformers, MNN, adb) is installed."""
    repo = copy_repository(root, tmp_path / "repo")
    env = public_pip_env(compile_bytecode=False)
    proc = subprocess.run(
        ["bash", "install.sh", "--light"],
        cwd=repo,
        env={**env, "PYTHON": system_python()},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Looking in indexes" not in proc.stdout  # pip names any index beside PyPI
    assert "Processing /" not in proc.stdout  # and local files
    assert "DEPRECATION" not in proc.stderr
    venv = repo / ".venv"
    installed = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    for heavy in ("torch==", "transformers==", "mnn==", "adbutils==", "llmexport=="):
        assert heavy not in installed
    proc = subprocess.run(
        ["bash", "-c", f". .venv/bin/activate && snakemake --cores 1 --config replay={ARCHIVE}"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    import tarfile

    with tarfile.open(root / ARCHIVE) as tar:
        shipped = pd.read_csv(tar.extractfile("results/host-sme2/summary.csv"))
    replayed = pd.read_csv(repo / "results" / "replay" / "host-sme2-archive" / "summary.csv")
    pd.testing.assert_frame_equal(replayed[shipped.columns], shipped)


PIP_DRY_RUN = [
    sys.executable,
    "-m",
    "pip",
    "install",
    "--dry-run",
    "--ignore-installed",
    "--no-deps",
]
PIP_DRY_RUN += ["--require-hashes"]


@pytest.mark.slow
@pytest.mark.network
@needs_pypi
def test_torch_cpu_comes_from_the_index_the_lock_names(root, tmp_path):
    """locks/py311-pytorch-cpu.txt names PyTorch's CPU index itself: with pip's configuration
    off and the loopback stand-in added through PIP_EXTRA_INDEX_URL, pip takes the CPU build
    from it (the hash decides), as install.sh's first step does."""
    with wheel_index(torch_wheel(tmp_path / "wheel")) as url:
        proc = subprocess.run(
            [*PIP_DRY_RUN, "-r", str(root / "locks/py311-pytorch-cpu.txt")],
            env=public_pip_env(url, compile_bytecode=False),
            capture_output=True,
            text=True,
            check=False,
        )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "https://download.pytorch.org/whl/cpu" in proc.stdout  # the lock's own index
    assert "Would install torch-2.13.0+cpu" in proc.stdout


# the Pythons each lock serves (install.sh picks the lock by Python)
LOCK_PYTHONS = {
    "py311.txt": ["3.11"],
    "py312-py313.txt": ["3.12", "3.13"],
    "light.txt": ["3.11", "3.12", "3.13"],
    "bootstrap.txt": ["3.11", "3.12", "3.13"],
}


@pytest.mark.slow
@pytest.mark.network
@needs_pypi
def test_every_locked_file_is_on_pypi_with_its_hash(root):
    """Every hash of every lock line is a file PyPI serves for that release, and for each
    Python the lock serves at least one of them installs on this platform (a compatible
    wheel, or the sdist). torch's CPU build lives on PyTorch's index: see the test above.
    (One test for every lock: each project's index page is fetched once.)"""
    problems = []
    for lock, pythons in sorted(LOCK_PYTHONS.items()):
        problems += index_problems(root / "locks" / lock, pythons)
    assert problems == []


@pytest.mark.network
@needs_pypi
def test_a_lock_line_pypi_does_not_serve_is_found(tmp_path):
    lock = tmp_path / "lock.txt"
    real = "sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254"
    lock.write_text(f"six==1.16.0 --hash={real} --hash=sha256:{'0' * 64}\n")
    problems = index_problems(lock, ["3.11"])
    assert problems == [f"lock.txt: six==1.16.0: no file with sha256 {'0' * 64}"]
    lock.write_text(f"six==1.16.0 --hash=sha256:{'0' * 64}\n")
    assert "nothing installs on 3.11" in index_problems(lock, ["3.11"])[-1]


def test_install_refuses_what_it_cannot_do_and_says_why(root, tmp_path):
    repo = copy_repository(root, tmp_path / "repo")
    bad = subprocess.run(["bash", "install.sh", "--lite"], cwd=repo, capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown argument '--lite'" in bad.stderr
    old = subprocess.run(
        ["bash", "install.sh"],
        cwd=repo,
        env={**os.environ, "PYTHON": "no-such-python"},
        capture_output=True,
        text=True,
    )
    assert old.returncode == 2 and "no Python 'no-such-python'" in old.stderr
    (repo / ".venv" / "bin").mkdir(parents=True)
    fake = repo / ".venv" / "bin" / "python"
    fake.write_text("#!/bin/sh\necho 3.9\n")
    fake.chmod(0o755)
    other = subprocess.run(["bash", "install.sh"], cwd=repo, capture_output=True, text=True)
    assert other.returncode == 2 and ".venv holds Python 3.9" in other.stderr
    assert not (repo / "mnn_sme2_repro.egg-info").exists()  # nothing was installed
