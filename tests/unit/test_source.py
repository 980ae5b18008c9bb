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


def test_a_local_tree_is_named_by_the_release_whose_files_it_holds(repo, tmp_path, monkeypatch):
    """A copy of a release re-committed in another history (as a checkout made from a
    repository snapshot is) has another commit but the release's tree: the build record says
    which release it is; another tree, or local changes, say so."""
    from mnnrepro.toolchain import source

    path, first = repo
    release_tree = git(path, "rev-parse", f"{first}^{{tree}}")
    monkeypatch.setitem(source.RELEASE_TREES, release_tree, ("MNN 9.9.9", first))
    copy = tmp_path / "copy"
    copy.mkdir()
    git(copy, "init", "-q")
    (copy / "CMakeLists.txt").write_text("project(x)\n")  # the release's files, re-committed
    git(copy, "add", ".")
    git(copy, "-c", "user.email=o@example.invalid", "-c", "user.name=other", "commit", "-qm", "c")
    info = describe_local(copy, allow_dirty=False)
    assert info["commit"] != first and info["tree"] == release_tree
    assert source.release_text(info) == f"MNN 9.9.9 ({first[:7]})"
    (copy / "CMakeLists.txt").write_text("project(changed)\n")
    dirty = describe_local(copy, allow_dirty=True)
    assert source.release_text(dirty) == f"MNN 9.9.9 ({first[:7]}, with local changes)"
    later = describe_local(path, allow_dirty=False)  # the repository's second commit
    assert later["release"] is None
    assert source.release_text(later).endswith("no known release")
    fetched = checkout_git(f"file://{path}", first, tmp_path / "src")
    assert source.release_text(fetched) == f"MNN 9.9.9 ({first[:7]})"


def test_the_known_release_trees_are_mnns_own():
    """The pins README and the configs cite: release 3.6.1 is commit d407447."""
    from mnnrepro.toolchain.source import RELEASE_TREES

    assert {name: commit[:7] for name, commit in RELEASE_TREES.values()} == {
        "MNN 3.6.1": "d407447",
        "MNN 3.6.0": "cc20f67",
    }


PATCH = """--- a/CMakeLists.txt
+++ b/CMakeLists.txt
@@ -1 +1,2 @@
 project(y)
+# patched
"""


def patch_file(tmp_path, text=PATCH, name="fix.patch"):
    from mnnrepro.files import sha256_file

    path = tmp_path / name
    path.write_text(text)
    return {"path": str(path), "sha256": sha256_file(path)}


def test_patches_apply_to_a_copy_and_are_pinned_by_sha256(repo, tmp_path):
    """A local checkout is never changed: its committed tree is copied and patched."""
    from mnnrepro.toolchain.source import provide_source

    path, _ = repo
    patch = patch_file(tmp_path)
    receipt = provide_source({"path": str(path)}, {}, tmp_path / "cache", [patch])
    assert (tmp_path / "cache" / "patched" / "CMakeLists.txt").read_text().endswith("# patched\n")
    assert receipt["path"] == str((tmp_path / "cache" / "patched").resolve())
    assert receipt["patches"] == [patch] and receipt["patched_from"] == str(path.resolve())
    assert (path / "CMakeLists.txt").read_text() == "project(y)\n"  # the checkout untouched
    assert git(path, "status", "--porcelain") == ""


def test_a_patch_that_does_not_apply_or_changed_fails_naming_it(repo, tmp_path):
    from mnnrepro.toolchain.source import provide_source

    path, _ = repo
    stale = patch_file(tmp_path, PATCH.replace("project(y)", "project(z)"), "stale.patch")
    with pytest.raises(
        SourceError, match=r"patch 0 of this source, .*stale\.patch, does not apply"
    ):
        provide_source({"path": str(path)}, {}, tmp_path / "cache", [stale])
    assert not (tmp_path / "cache" / "patched").exists()  # nothing half-written
    edited = patch_file(tmp_path)
    (tmp_path / "fix.patch").write_text(PATCH + "+# more\n")
    with pytest.raises(SourceError, match=r"patch 0 of this source: .*fix\.patch has another"):
        provide_source({"path": str(path)}, {}, tmp_path / "cache", [edited])


@pytest.mark.slow
def test_a_patch_makes_another_source_and_engine_key(repo, tmp_path):
    from mnnrepro.toolchain.records import engine_key, source_key

    path, _ = repo
    base = {"source": {"path": str(path)}}  # the `mnn` section
    patched = {**base, "patches": [patch_file(tmp_path)]}
    spec = {"build": {"platform": "host", "flags": {}}}
    assert source_key(base) != source_key(patched)
    assert source_key(base) == source_key({**base, "patches": []})
    assert engine_key("e", spec, "build", source=base) != engine_key(
        "e", spec, "build", source=patched
    )
