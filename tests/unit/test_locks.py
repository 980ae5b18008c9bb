"""The locks (locks/*.txt) agree with pyproject.toml and pin every package by hash."""

from __future__ import annotations

import re
import sys
import tomllib

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "envs"))
import closure

LOCKS = ["py311.txt", "py312-py313.txt"]  # the full locks
EVERY_LOCK = [*LOCKS, "light.txt", "bootstrap.txt", "py311-pytorch-cpu.txt"]


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def direct_pins(root) -> dict[str, str]:
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    pins = {}
    extras = project["optional-dependencies"]
    for req in [*project["dependencies"], *extras["engine"], *extras["test"]]:
        name, _, version = req.partition("==")
        pins[normal(name)] = version
    return pins


def lock_entries(path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of each requirement in a pip-style lock."""
    entries, current = {}, None
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)", line)
        if match:
            current = normal(match.group(1))
            entries[current] = (match.group(2), 0)
        elif current and "--hash=sha256:" in line:
            version, hashes = entries[current]
            entries[current] = (version, hashes + 1)
    return entries


@pytest.mark.parametrize("lock", LOCKS)
def test_every_direct_pin_is_locked_at_the_same_version(root, lock):
    entries = lock_entries(root / "locks" / lock)
    for name, version in direct_pins(root).items():
        assert name in entries, f"{lock}: {name} missing"
        assert entries[name][0].split("+")[0] == version, f"{lock}: {name} {entries[name][0]}"


@pytest.mark.parametrize("lock", EVERY_LOCK)
def test_every_locked_package_has_a_hash(root, lock):
    entries = lock_entries(root / "locks" / lock)
    assert len(entries) > (100 if lock in LOCKS else 0)  # the transitive set in a full lock
    assert [n for n, (_, hashes) in entries.items() if hashes == 0] == []


def blocks(path) -> dict[str, str]:
    """name -> its requirement and hash lines, as text (envs/closure.py reads locks so)."""
    return {name: "\n".join(lines) for name, lines in closure.lock_blocks(path).items()}


@pytest.mark.parametrize("part", ["light.txt", "bootstrap.txt", "py311-pytorch-cpu.txt"])
def test_partial_locks_repeat_the_full_locks_lines(root, part):
    """What install.sh installs first or alone is pinned exactly as in the Python 3.11 lock
    (the same lines: versions and hashes), and at the same versions as in the 3.12/3.13 one."""
    py311 = blocks(root / "locks" / "py311.txt")
    universal = lock_entries(root / "locks" / "py312-py313.txt")
    for name, text in blocks(root / "locks" / part).items():
        if name == "pip":  # the installer is in no full lock (pip-compile leaves it out)
            continue
        assert py311.get(name) == text, f"{part}: {name} differs from py311.txt"
        if part != "py311-pytorch-cpu.txt":
            version = text.split("==")[1].split()[0]
            assert universal[name][0] == version, f"{part}: {name} differs from py312-py313.txt"


def test_light_lock_is_what_the_closure_writes(root):
    assert (root / "locks" / "light.txt").read_text() == closure.light_lock_text(), (
        "locks/light.txt is stale: python envs/closure.py --write"
    )


def test_the_install_command_covers_every_supported_python(root):
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.14"
    script = (root / "install.sh").read_text()
    for version, lock in (("3.11", "py311.txt"), ("3.12", "py312-py313.txt"), ("3.13", "")):
        assert version in script and f"locks/{lock}" in script
    assert "locks/light.txt" in script and "locks/bootstrap.txt" in script
    assert "--require-hashes" in script and "--no-deps" in script
    # CI installs exactly as README says
    assert "bash install.sh" in (root / ".ci" / "run").read_text()
    assert "bash install.sh" in (root / "README.md").read_text().split("## ")[1]
