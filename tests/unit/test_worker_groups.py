"""The tests that share an expensive fixture run on one pytest-xdist worker, which makes it once
(tests/conftest.py's shared_group: `--dist loadgroup` gives a group one worker)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# a plugin for the collection below: each shared fixture -> the groups of the tests using it
PROBE = """
import collections, json

def pytest_collection_finish(session):
    from conftest import SHARED_RUN_GROUPS  # loaded after this plugin

    groups = collections.defaultdict(set)
    for item in session.items:
        marks = tuple(m.args[0] for m in item.iter_markers("xdist_group"))
        for name, definitions in item._fixtureinfo.name2fixturedefs.items():
            if name in SHARED_RUN_GROUPS or (definitions and definitions[-1].scope == "module"):
                groups[f"{definitions[-1].baseid}::{name}"].add(marks)
    print("GROUPS " + json.dumps({k: sorted(v) for k, v in groups.items()}))
"""


def test_the_tests_sharing_a_module_fixture_or_a_shared_run_share_one_worker(root, tmp_path):
    """Each module-scoped fixture and each shared run (conftest.SHARED_RUN_GROUPS) is made
    once: every test of the whole suite that uses it carries one xdist group, the same for all
    of them."""
    (tmp_path / "groups_probe.py").write_text(PROBE)
    collect = ["--collect-only", "-q", "-n", "0", "-p", "groups_probe", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *collect, "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("GROUPS ")]
    groups = json.loads(line.removeprefix("GROUPS "))
    shared = {
        "tests::quickstart_repo",
        "tests/unit/test_attribution.py::program",
    }  # the suite's own
    assert shared <= set(groups)
    assert {name: marks for name, marks in groups.items() if len(marks) != 1 or [] in marks} == {}
