"""Emulated device pieces that need no download: .deb unpacking and the agreement table."""

from __future__ import annotations

import io
import tarfile

import pandas as pd
import pytest

from mnnrepro.analysis.emulation import agreement_table
from mnnrepro.devices.qemu import vector_length_bits
from mnnrepro.fetch import FetchError
from mnnrepro.unpack import extract_deb


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


def test_only_the_named_paths_are_written_after_every_member_is_checked(tmp_path):
    """qemu-user holds a binary per guest architecture; the device runs one of them."""
    path = tmp_path / "qemu.deb"
    members = [(f"./usr/bin/qemu-{arch}", "file", arch.encode()) for arch in ("aarch64", "arm")]
    path.write_bytes(deb(members))
    extract_deb(path, tmp_path / "root", only=("usr/bin/qemu-aarch64",))
    assert [p.name for p in (tmp_path / "root/usr/bin").iterdir()] == ["qemu-aarch64"]
    assert (tmp_path / "root/usr/bin/qemu-aarch64").read_bytes() == b"aarch64"
    with pytest.raises(FetchError, match=r"holds no usr/bin/qemu-riscv64$"):
        extract_deb(path, tmp_path / "other", only=("usr/bin/qemu-riscv64",))
    path.write_bytes(deb([*members, ("./a/link", "link", "../../../etc/passwd")]))
    with pytest.raises(FetchError, match="leaves the userland directory"):  # checked all the same
        extract_deb(path, tmp_path / "third", only=("usr/bin/qemu-aarch64",))
    assert not (tmp_path / "other").exists() and not (tmp_path / "third").exists()


def test_vector_length_from_the_cpu_option():
    assert vector_length_bits("max,sme-default-vector-length=64") == 512
    assert vector_length_bits("max,sme=off") is None


def test_a_vector_length_qemu_would_not_give_as_written_is_refused_when_the_plan_is_made(root):
    """QEMU gives a process a streaming vector length SME has: one asked for that SME has not
    (48 bytes, 512 bytes, a word) would run as another length under this device's name; the
    plan refuses it, one line naming the key, and the facts job refuses a process that got
    another length than configured, whatever the reason."""
    import copy

    import yaml

    from mnnrepro.config import ConfigError
    from mnnrepro.devices.qemu import vector_length_mismatch
    from mnnrepro.plan.checks import check

    config = yaml.safe_load((root / "config/emulated-sme2.yaml").read_text())
    check(copy.deepcopy(config))
    name = next(n for n, d in config["devices"].items() if "qemu" in d)
    for value in ("48", "512", "max"):
        bad = copy.deepcopy(config)
        bad["devices"][name]["qemu"]["cpu"] = f"max,sme-default-vector-length={value}"
        with pytest.raises(ConfigError) as err:
            check(bad)
        line = str(err.value).splitlines()[0]
        assert line.startswith(f"config key `devices.{name}.qemu.cpu`: sme-default-vector-length")
        assert "no SME vector length" in line
    vector_length_mismatch(name, 512, 512)
    vector_length_mismatch(name, None, 256)  # no length asked: whatever QEMU's default is
    with pytest.raises(ConfigError, match=rf"`devices\.{name}\.qemu\.cpu`: asks for 512-bit"):
        vector_length_mismatch(name, 512, 256)


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


def test_the_agreement_table_is_teacher_forced_across_devices_where_recorded():
    """Each emulated device was fed the reference device's tokens of the same variant: a
    device whose free-running answer flipped a near-tie at step 0 (rounding, nothing after it
    compared) but is confidently wrong later is `wrong` at that step."""

    def step(*top, sd=4.0):
        return {"sd": sd, "top": [list(t) for t in top]}

    same = step((7, 15.0), (8, 11.0))
    near, flipped = step((13, 13.15), (395, 13.12)), step((395, 13.07), (13, 12.98))
    late = step((9, 16.0), (7, 10.0))
    ref_answer = {"prompt": "p", "tokens": [13, 7, 7], "steps": [near, same, same]}
    free = {"prompt": "p", "tokens": [395, 2, 2], "steps": [flipped, same, same]}
    fed = {"prompt": "p", "tokens": [395, 7, 9], "steps": [flipped, same, late]}
    fed["forced_tokens"] = [13, 7, 7]

    def payload(answer, forced=None):
        out = {"answers": [answer], "engine": {"device_supports": ""}}
        if forced is not None:
            out["teacher_forced_by_device"] = {"ref": [forced]}
        return {"v": out}

    greedy = {"ref": payload(ref_answer), "vl512": payload(free, fed)}
    facts = {d: {"device": d, "emulated": True, "cpu": "max", "sme2": True} for d in greedy}
    table = agreement_table(greedy, facts, "ref", "m").set_index("device")
    row = table.loc["vl512"]
    assert row["free_judged"] == "equivalent within rounding"  # what the old table said
    assert row["judged"] == "wrong" and bool(row["teacher_forced"])
    assert row["steps_compared"] == 3 and row["first_top1_difference"] == 0
    assert "first divergence at token 2" in row["reason"]
    assert table.loc["ref", "judged"] == "identical"


def test_the_report_names_the_teacher_forced_rule_when_the_judged_rows_were():
    """The reference device's rows (compared with themselves) and a crashed device's rows are
    never teacher-forced; the section's rule text follows the rows that were judged."""
    from mnnrepro.analysis.correctness import TEACHER_FORCED_RULE
    from mnnrepro.analysis.divergence import NEAR_TIE_RULE
    from mnnrepro.analysis.emulation import emulation_section

    def row(device, forced, judged):
        return {
            "model": "m",
            "device": device,
            "reference": "ref",
            "variant": "v",
            "sme_vector_length_bits": 512.0,
            "sme2": True,
            "teacher_forced": forced,
            "judged": judged,
            "first_divergence": None,
            "first_top1_difference": None,
        }

    rows = [row("ref", False, "identical"), row("vl512", True, "identical")]
    rows.append(row("vl1024", False, "crashed"))
    text = "\n".join(emulation_section([pd.DataFrame(rows)]))
    assert TEACHER_FORCED_RULE in text and NEAR_TIE_RULE not in text
    old = [row("ref", False, "identical"), row("vl512", False, "identical")]
    text = "\n".join(emulation_section([pd.DataFrame(old)]))
    assert "Judged at the first divergence" in text and TEACHER_FORCED_RULE not in text
    mixed = [*rows, row("vl256", False, "wrong")]
    text = "\n".join(emulation_section([pd.DataFrame(mixed)]))
    assert TEACHER_FORCED_RULE in text and "Devices ['vl256'] have records from before" in text
