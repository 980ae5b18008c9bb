"""A replay checked, not promised: the tables a replay derived again, compared cell by cell
with the archive's own, and what differs said with its reason (replay.json, the first section
of the replay's summary.md).

Compared as text, as the files hold them (a CSV cell is the same when its characters are):
a table is `identical` when its bytes are. A difference is one of three kinds, each with its
reason: a column this workflow derives that the archive's did not (a newer workflow), a
column the archive has that this workflow no longer derives, or a value that changed (the
same records derived differently: a change of method to read in the two commits' history).
"""

from __future__ import annotations

import io
import json

import pandas as pd

from mnnrepro.archive.replay import archived_member
from mnnrepro.files import sha256_file

SHOWN_CHANGES = 20  # cells listed per table; the count is of all


def _cells(data: bytes) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)


def compare_table(archived: bytes, replayed: bytes) -> dict:
    """What differs between the archive's table and the replay's, by kind."""
    old, new = _cells(archived), _cells(replayed)
    added = [c for c in new.columns if c not in old.columns]
    removed = [c for c in old.columns if c not in new.columns]
    changed = []
    if len(old) != len(new):
        rows = f"{len(old)} rows in the archive, {len(new)} in the replay"
    else:
        rows = ""
        for column in [c for c in old.columns if c in new.columns]:
            for row in (old[column] != new[column]).to_numpy().nonzero()[0]:
                changed.append(
                    {
                        "line": int(row) + 2,  # the CSV's line (its header is line 1)
                        "column": column,
                        "archived": old[column].iloc[row],
                        "replayed": new[column].iloc[row],
                    }
                )
    return {
        "identical": archived == replayed,
        "added_columns": added,
        "removed_columns": removed,
        "rows_differ": rows,
        "changed_cells": len(changed),
        "changes": changed[:SHOWN_CHANGES],
    }


def check_replay(archive: str, experiment: str, replayed: dict[str, str], workflow: dict) -> dict:
    """replay.json: the archive (path, sha256, the workflow commit that made it), this
    workflow's commit, and per table (name -> the replay's file) what differs."""
    provenance = archived_member(archive, "provenance.json")
    made_by = json.loads(provenance) if provenance else {}
    tables = {}
    for name, path in sorted(replayed.items()):
        archived = archived_member(archive, f"results/{experiment}/{name}")
        with open(path, "rb") as fh:
            derived = fh.read()
        if archived is None:
            tables[name] = {"in_archive": False}
        else:
            tables[name] = {"in_archive": True, **compare_table(archived, derived)}
    return {
        "archive": archive,
        "archive_sha256": sha256_file(archive),
        "archived_by": dict(made_by.get("workflow") or {}),
        "replayed_by": workflow,
        "tables": tables,
        "identical": all(t.get("identical", True) for t in tables.values()),
    }


def _commit(state: dict) -> str:
    commit = state.get("commit")
    if not commit:
        return "a workflow outside git (its commit unknown)"
    dirty = " (with uncommitted changes)" if state.get("dirty") else ""
    return f"workflow commit `{commit[:10]}`{dirty}"


def table_text(name: str, table: dict, archived_by: str) -> str:
    if not table["in_archive"]:
        return f"`{name}`: not in the archive (its records are; derived again here only)"
    if table["identical"]:
        return f"`{name}`: identical to the archive's, byte for byte"
    parts = []
    if table["added_columns"]:
        parts.append(
            f"{len(table['added_columns'])} column(s) added ({', '.join(table['added_columns'])})"
            f": derived by this workflow, not yet by the archive's ({archived_by})"
        )
    if table["removed_columns"]:
        parts.append(
            f"column(s) {', '.join(table['removed_columns'])} of the archive not derived "
            "here: this workflow no longer writes them"
        )
    if table["rows_differ"]:
        parts.append(f"**rows differ**: {table['rows_differ']}")
    elif table["changed_cells"]:
        first = table["changes"][0]
        parts.append(
            f"**{table['changed_cells']} value(s) changed** (line {first['line']}, "
            f"`{first['column']}`: {first['archived']!r} archived, {first['replayed']!r} "
            "replayed; all in replay.json): the same records derived differently by the two "
            "workflow commits"
        )
    else:
        parts.append("every value of the archive's columns identical")
    return f"`{name}`: " + "; ".join(parts)


def replay_section(check: dict) -> list[str]:
    """The first section of a replay's summary.md: what was replayed, by which commits, and
    what differs from the archive's own tables."""
    archived_by = _commit(check["archived_by"])
    lines = [
        "",
        f"**A replay** of `{check['archive']}` (sha256 `{check['archive_sha256'][:16]}…`), "
        f"archived by {archived_by}, replayed by {_commit(check['replayed_by'])}: every "
        "record checked against the archive's "
        "MANIFEST.sha256, everything below derived again from those records. Against the "
        "archive's own tables (`replay.json`):",
        "",
    ]
    lines += [f"- {table_text(n, t, archived_by)}" for n, t in check["tables"].items()]
    return lines
