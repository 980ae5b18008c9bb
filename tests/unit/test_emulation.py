"""Emulated device pieces that need no download: .deb unpacking and the agreement table."""

from __future__ import annotations

import io
import tarfile

import pytest

from mnnrepro.analysis.emulation import agreement_table
from mnnrepro.devices.qemu import vector_length_bits
from mnnrepro.files import FetchError, extract_deb


def deb(members) -> bytes:
    """A real .deb (ar archive: debian-binary, control.tar.xz, data.tar.xz)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            else:
                info.type, info.linkname = tarfile.SYMTYPE, payload
                tar.addfile(info)
    parts = [("debian-binary", b"2.0\n"), ("control.tar.xz", b""), ("data.tar.xz", data.getvalue())]
    out = b"!<arch>\n"
    for name, blob in parts:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(blob):<10}`\n".encode() + blob
        out += b"\n" if len(blob) % 2 else b""
    return out


def test_unpacks_files_and_reroots_absolute_links(tmp_path):
    path = tmp_path / "p.deb"
    path.write_bytes(
        deb(
            [
                ("./etc/python3.11/sitecustomize.py", "file", b"# site\n"),
                (
                    "./usr/lib/python3.11/sitecustomize.py",
                    "link",
                    "/etc/python3.11/sitecustomize.py",
                ),
                ("./usr/lib/libx.so", "link", "libx.so.1"),
            ]
        )
    )
    extract_deb(path, tmp_path / "root")
    link = tmp_path / "root/usr/lib/python3.11/sitecustomize.py"
    assert link.is_symlink() and not str(link.readlink()).startswith("/")
    assert link.read_text() == "# site\n"  # resolves inside the root, not on the host


@pytest.mark.parametrize(
    "member",
    [
        ("../evil", "file", b"x"),
        ("/abs", "file", b"x"),
        ("./a/link", "link", "../../../etc/passwd"),
    ],
)
def test_refuses_members_that_escape(tmp_path, member):
    path = tmp_path / "evil.deb"
    path.write_bytes(deb([("./ok", "file", b"x"), member]))
    with pytest.raises(FetchError):
        extract_deb(path, tmp_path / "root")
    assert not (tmp_path / "root").exists()


def test_vector_length_from_the_cpu_option():
    assert vector_length_bits("max,sme-default-vector-length=64") == 512
    assert vector_length_bits("max,sme=off") is None


def test_agreement_table_marks_wrong_and_crashed_answers():
    def payload(tokens, crashed=None):
        answer = {"prompt": "p", "tokens": tokens}
        if crashed:
            answer["crashed"] = crashed
        return {"v": {"answers": [answer], "engine": {"device_supports": ""}}}

    greedy = {
        "host": payload([1, 2, 3]),
        "ok": payload([1, 2, 3]),
        "bad": payload([1, 9, 9]),
        "dead": payload([], "qemu: uncaught target signal 11"),
    }
    facts = {
        d: {"device": d, "emulated": d != "host", "cpu": "max", "sme2": d != "host"} for d in greedy
    }
    table = agreement_table(greedy, facts, "host", "m").set_index("device")
    assert table.loc["ok", "identical"] and not table.loc["bad", "identical"]
    assert table.loc["bad", "first_divergence"] == 1
    assert table.loc["dead", "crashed"].startswith("qemu:")
