"""Every archive the repository ships replays to its own conclusions: the replay says first
that it is one (of which archive, made and replayed by which workflow commits), and its tables
are the archive's byte for byte or differ only as it explains: columns a newer workflow adds
or no longer writes, never a value or a row (README: "the same summary.csv as the archive's")."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_snakemake, without_replay_section

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.relative_to(ROOT) for p in (ROOT / "benchmarks/results").glob("*.tar.gz"))


def test_the_shipped_archives_are_found():
    assert Path("benchmarks/results/host-sme2-archive.tar.gz") in SHIPPED


@pytest.mark.slow
@pytest.mark.parametrize("archive", SHIPPED, ids=str)
def test_a_shipped_archive_replays_to_its_own_tables_or_says_what_differs(root, archive, tmp_path):
    import tarfile

    run_snakemake(
        root, "--cores", "1", "--directory", str(tmp_path), "--config", f"replay={root / archive}"
    )
    replayed = tmp_path / "results" / "replay" / archive.name.removesuffix(".tar.gz")
    check = json.loads((replayed / "replay.json").read_text())
    assert check["archive_sha256"] == hashlib.sha256((root / archive).read_bytes()).hexdigest()
    assert check["archived_by"]["commit"] and check["replayed_by"]
    assert {"summary.csv", "bench.csv"} <= set(check["tables"])
    with tarfile.open(root / archive) as tar:
        members = set(tar.getnames())
    for name, table in check["tables"].items():
        assert table["in_archive"] == any(m.endswith(f"/{name}") for m in members), name
        if not table["in_archive"]:
            continue
        # nothing measured or concluded differs: only columns, each kind with its reason
        assert table["rows_differ"] == "" and table["changed_cells"] == 0, (name, table)
        if not table["identical"]:
            assert table["added_columns"] or table["removed_columns"], name
    # the verdicts are the archive's, and summary.md says first what the replay checked
    text = (replayed / "summary.md").read_text()
    assert text.splitlines()[2].startswith(f"**A replay** of `{root / archive}`")
    summary = pd.read_csv(replayed / "summary.csv")
    body = without_replay_section(replayed)
    for row in summary.itertuples():
        assert f"| **{row.verdict}** |" in body


@pytest.mark.slow
def test_a_replay_that_derives_a_different_value_says_so(root, tmp_path):
    """The check can fail: an archive whose summary.csv holds a value its records do not
    give (a typed-in verdict), repacked with a matching manifest, replays to a table that
    differs there, and replay.json and summary.md name the cell."""
    import tarfile

    from mnnrepro.archive.pack import write_archive

    source = root / "benchmarks/results/host-sme2-archive.tar.gz"
    with tarfile.open(source) as tar:
        members = {
            m.name: tar.extractfile(m).read()
            for m in tar.getmembers()
            if m.isfile() and m.name != "MANIFEST.sha256"
        }
    name = "results/host-sme2/summary.csv"
    members[name] = members[name].replace(b"inconclusive", b"reproduced", 1)
    archive = tmp_path / "edited-archive.tar.gz"
    write_archive(archive, members)
    work = tmp_path / "work"
    work.mkdir()
    run_snakemake(root, "--cores", "1", "--directory", str(work), "--config", f"replay={archive}")
    replayed = work / "results/replay/edited-archive"
    table = json.loads((replayed / "replay.json").read_text())["tables"]["summary.csv"]
    assert table["changed_cells"] == 1
    (change,) = table["changes"]
    assert (change["column"], change["archived"], change["replayed"]) == (
        "verdict",
        "reproduced",
        "inconclusive",
    )
    assert "**1 value(s) changed**" in (replayed / "summary.md").read_text()
