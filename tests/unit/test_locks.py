"""The locks (locks/*.txt) agree with pyproject.toml and pin every package by hash."""

from __future__ import annotations

import re
import tomllib

import pytest

LOCKS = ["py311.txt", "py312-py313.txt"]


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


@pytest.mark.parametrize("lock", LOCKS)
def test_every_locked_package_has_a_hash(root, lock):
    entries = lock_entries(root / "locks" / lock)
    assert len(entries) > 100  # the transitive set, not just the direct pins
    assert [n for n, (_, hashes) in entries.items() if hashes == 0] == []


def test_the_install_command_covers_every_supported_python(root):
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.14"
    script = (root / "install.sh").read_text()
    for version, lock in (("3.11", "py311.txt"), ("3.12", "py312-py313.txt")):
        assert version in script and f"locks/{lock}" in script
    assert "--require-hashes" in script and "--no-deps" in script
    # CI installs exactly as README says
    assert "bash install.sh" in (root / ".ci" / "run").read_text()
    assert "bash install.sh" in (root / "README.md").read_text().split("## ")[1]
