"""MNN source from a local git repository made in the test (the same code fetches GitHub)."""

from __future__ import annotations

import subprocess

import pytest

from mnnrepro.toolchain.source import SourceError, checkout_git, describe_local


def git(cwd, *args):
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "mnn"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "test")
    git(path, "config", "uploadpack.allowAnySHA1InWant", "true")
    (path / "CMakeLists.txt").write_text("project(x)\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "one")
    first = git(path, "rev-parse", "HEAD")
    (path / "CMakeLists.txt").write_text("project(y)\n")
    git(path, "commit", "-qam", "two")
    return path, first


def test_fetches_exactly_the_pinned_commit(repo, tmp_path):
    path, first = repo
    info = checkout_git(f"file://{path}", first, tmp_path / "src")
    assert info["commit"] == first
    assert (tmp_path / "src" / "CMakeLists.txt").read_text() == "project(x)\n"


def test_unknown_commit_is_an_error_and_leaves_nothing(repo, tmp_path):
    path, _ = repo
    with pytest.raises(SourceError, match="git fetch"):
        checkout_git(f"file://{path}", "1" * 40, tmp_path / "src")
    assert not (tmp_path / "src").exists()


def test_short_or_symbolic_refs_are_refused(repo, tmp_path):
    path, first = repo
    for ref in (first[:12], "main", "v3.6.1"):
        with pytest.raises(SourceError, match="full 40-hex"):
            checkout_git(f"file://{path}", ref, tmp_path / "src")


def test_local_path_records_commit_and_refuses_dirty_tree(repo):
    path, _ = repo
    assert describe_local(path, allow_dirty=False)["dirty"] is False
    (path / "CMakeLists.txt").write_text("project(dirty)\n")
    with pytest.raises(SourceError, match="uncommitted changes"):
        describe_local(path, allow_dirty=False)
    assert describe_local(path, allow_dirty=True)["dirty"] is True
