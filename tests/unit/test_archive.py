"""Deterministic archives and extraction that refuses to escape its directory."""

from __future__ import annotations

import io
import tarfile

import pytest

from mnnrepro.archive import UnsafeArchiveError, safe_extract, verify_manifest, write_archive


def test_same_members_same_bytes(tmp_path):
    (tmp_path / "a.txt").write_text("alpha")
    members = {"results/x/a.txt": tmp_path / "a.txt", "config.yaml": b"k: v\n"}
    write_archive(tmp_path / "one.tar.gz", members)
    (tmp_path / "a.txt").touch()  # a newer mtime must not matter
    write_archive(tmp_path / "two.tar.gz", dict(reversed(members.items())))
    assert (tmp_path / "one.tar.gz").read_bytes() == (tmp_path / "two.tar.gz").read_bytes()


def test_roundtrip_and_manifest(tmp_path):
    write_archive(tmp_path / "a.tar.gz", {"d/f.json": b"{}", "g.txt": b"x"})
    names = safe_extract(tmp_path / "a.tar.gz", tmp_path / "out")
    assert sorted(names) == ["MANIFEST.sha256", "d/f.json", "g.txt"]
    verify_manifest(tmp_path / "out")
    (tmp_path / "out" / "g.txt").write_text("tampered")
    with pytest.raises(ValueError, match=r"g\.txt does not match"):
        verify_manifest(tmp_path / "out")


def evil_archive(path, build):
    with tarfile.open(path, "w:gz") as tar:
        build(tar)


def add_file(tar, name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def add_link(tar, name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    tar.addfile(info)


@pytest.mark.parametrize(
    "build",
    [
        lambda t: add_file(t, "../escape.txt"),
        lambda t: add_file(t, "/etc/evil"),
        lambda t: add_file(t, "ok/../../escape.txt"),
        lambda t: add_link(t, "link", "/etc/passwd"),
        lambda t: add_link(t, "hard", "../outside", tarfile.LNKTYPE),
    ],
    ids=["dotdot", "absolute", "nested-dotdot", "symlink", "hardlink"],
)
def test_unsafe_members_are_refused_before_anything_is_written(tmp_path, build):
    evil_archive(tmp_path / "evil.tar.gz", lambda t: (add_file(t, "fine.txt"), build(t)))
    with pytest.raises(UnsafeArchiveError):
        safe_extract(tmp_path / "evil.tar.gz", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "escape.txt").exists()
