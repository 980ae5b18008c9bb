"""Deterministic archives and extraction that refuses to escape its directory."""

from __future__ import annotations

import hashlib
import io
import tarfile

import pytest

from mnnrepro.archive.pack import verify_manifest, write_archive
from mnnrepro.unpack import UnsafeArchiveError, safe_extract


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


# ---- replay: only what the manifest vouches for ---------------------------------------------

RUN_INDEX = {
    "device": "host",
    "model": "m",
    "experiment": "e",
    "emulated": False,
    "runs": [
        {
            "invocation": {},
            "raw": "results/e/raw/host/m/a/rep-000.json",
            "sha256": hashlib.sha256(b'{"status": "ok"}').hexdigest(),
        }
    ],
}
ENGINE = {"engine": "x", "kind": "prebuilt", "pin": "mnn==3.6.1", "files": []}


def members(runs=RUN_INDEX):
    import json

    return {
        "config.resolved.yaml": b"experiment: e\n",
        "results/e/runs/host/m.json": json.dumps(runs).encode(),
        "results/e/raw/host/m/a/rep-000.json": b'{"status": "ok"}',
        "results/e/devices/host.json": b'{"device": "host"}',
        "results/engines/x-1/engine.json": json.dumps(ENGINE).encode(),
        "results/models/m/manifest.json": b'{"model": "m"}',
    }


def with_extra_member(src, dest, name, data=b"x"):
    """The same archive with one more member that MANIFEST.sha256 does not list."""
    with tarfile.open(src) as old, tarfile.open(dest, "w:gz") as new:
        for info in old.getmembers():
            new.addfile(info, old.extractfile(info))
        add_file(new, name, data)


def restore_to(archive, tmp_path):
    from mnnrepro.archive.replay import restore

    return restore(
        str(archive),
        str(tmp_path / "replayed"),
        "e",
        {"x": str(tmp_path / "replayed/engines/x-2/engine.json")},
        str(tmp_path / "replayed/models"),
    )


def test_restore_puts_every_record_where_the_rules_read_it(tmp_path):
    write_archive(tmp_path / "a.tar.gz", members())
    restore_to(tmp_path / "a.tar.gz", tmp_path)
    out = tmp_path / "replayed"
    assert (out / "runs/host/m.json").is_file() and (out / "raw/host/m/a/rep-000.json").is_file()
    assert (out / "engines/x-2/engine.json").is_file()  # by engine name, at today's key
    assert (out / "models/m/manifest.json").is_file()


def test_restore_refuses_a_member_the_manifest_does_not_list(tmp_path):
    write_archive(tmp_path / "a.tar.gz", members())
    with_extra_member(tmp_path / "a.tar.gz", tmp_path / "b.tar.gz", "results/e/runs/host/x.json")
    with pytest.raises(ValueError, match=r"members not in MANIFEST.sha256: \['results/e/runs"):
        restore_to(tmp_path / "b.tar.gz", tmp_path)


def test_restore_refuses_a_raw_record_path_outside_the_archive(tmp_path):
    outside = {**RUN_INDEX["runs"][0], "raw": "results/e/raw/../../../../etc/x"}
    runs = {**RUN_INDEX, "runs": [outside]}
    write_archive(tmp_path / "a.tar.gz", members(runs))
    with pytest.raises(ValueError, match="is not inside the archive's results/e/raw/"):
        restore_to(tmp_path / "a.tar.gz", tmp_path)


def test_a_manifest_may_not_name_a_path_outside_the_archive(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "MANIFEST.sha256").write_text("0" * 64 + "  ../secret\n")
    with pytest.raises(UnsafeArchiveError):
        verify_manifest(tmp_path / "out")


def test_the_archived_config_must_match_the_manifest(tmp_path):
    from mnnrepro.archive.replay import archived_config

    write_archive(tmp_path / "a.tar.gz", members())
    assert archived_config(str(tmp_path / "a.tar.gz")) == {"experiment": "e"}
    # a config swapped in after packing (its MANIFEST line no longer matches)
    with (
        tarfile.open(tmp_path / "a.tar.gz") as old,
        tarfile.open(tmp_path / "b.tar.gz", "w:gz") as new,
    ):
        for info in old.getmembers():
            data = old.extractfile(info).read()
            if info.name == "config.resolved.yaml":
                data = b"experiment: /etc\n"
                info.size = len(data)
            new.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match=r"config\.resolved\.yaml does not match"):
        archived_config(str(tmp_path / "b.tar.gz"))


def test_restore_refuses_an_absolute_member_before_writing_anything(tmp_path):
    write_archive(tmp_path / "a.tar.gz", members())
    with_extra_member(tmp_path / "a.tar.gz", tmp_path / "b.tar.gz", "/tmp/evil.json")
    with pytest.raises(UnsafeArchiveError, match=r"unsafe archive member name '/tmp/evil\.json'"):
        restore_to(tmp_path / "b.tar.gz", tmp_path)
    assert not (tmp_path / "replayed").exists()


@pytest.mark.parametrize(
    "config, key",
    [
        (b"experiment: /etc\n", "config key `experiment`"),  # would read another directory
        (b"experiment: e\nexperiment: f\n", "key `experiment` given twice"),
    ],
    ids=["absolute-experiment", "duplicate-key"],
)
def test_a_replay_validates_the_archived_config_like_a_live_one(root, tmp_path, config, key):
    """An archive whose manifest vouches for a config that a live run would refuse."""
    from conftest import run_snakemake

    write_archive(tmp_path / "a.tar.gz", {**members(), "config.resolved.yaml": config})
    proc = run_snakemake(
        root,
        "-n",
        "--directory",
        str(tmp_path),
        "--config",
        f"replay={tmp_path / 'a.tar.gz'}",
        check=False,
    )
    assert proc.returncode != 0
    assert f"--config replay={tmp_path / 'a.tar.gz'}: " in proc.stdout + proc.stderr
    assert key in proc.stdout + proc.stderr


def with_member_replaced(src, dest, name, data):
    """The same archive with one member's bytes changed after packing (MANIFEST unchanged)."""
    with tarfile.open(src) as old, tarfile.open(dest, "w:gz") as new:
        for info in old.getmembers():
            body = old.extractfile(info).read()
            if info.name == name:
                body = data
                info.size = len(body)
            new.addfile(info, io.BytesIO(body))


def test_an_edited_member_is_named_with_its_archive(tmp_path):
    from mnnrepro.errors import DataError

    write_archive(tmp_path / "a.tar.gz", members())
    edited = "results/e/devices/host.json"
    with_member_replaced(tmp_path / "a.tar.gz", tmp_path / "b.tar.gz", edited, b'{"d": 1}')
    with pytest.raises(DataError) as err:
        restore_to(tmp_path / "b.tar.gz", tmp_path)
    assert (
        str(err.value) == f"{tmp_path / 'b.tar.gz'}: member {edited} does not match MANIFEST.sha256"
    )


@pytest.mark.parametrize(
    "content", [b"not an archive at all", b"\x1f\x8b\x08 truncated gzip"], ids=["text", "gzip"]
)
def test_a_replay_of_something_that_is_no_archive_is_one_line(root, tmp_path, content):
    """Through Snakemake, as a user meets it: the project's one line naming the file, and no
    traceback (it was tarfile's ReadError with one)."""
    from conftest import run_snakemake

    from mnnrepro.archive.replay import archived_names
    from mnnrepro.errors import DataError

    bad = tmp_path / "results.tar.gz"
    bad.write_bytes(content)
    with pytest.raises(DataError, match="not a readable results archive"):
        archived_names(str(bad))
    proc = run_snakemake(
        root, "-n", "--directory", str(tmp_path), "--config", f"replay={bad}", check=False
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"--config replay={bad}: {bad}: not a readable results archive" in out
    assert "Traceback" not in out and "ReadError" not in out.split("replay=")[0]
