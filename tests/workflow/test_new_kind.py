"""A new engine kind, added in a copy of the repository by editing only the existing files that
docs/development.md's "Adding an engine kind" lists: the workflow plans its engine (a real dry
run), and the checks that keep kinds out of the rest of the workflow hold there too. The toy
kind is MNN's wheel under another key: what it runs is not the point, what it touches is."""

from __future__ import annotations

import re
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from conftest import copy_repository, run_snakemake

ROOT = Path(__file__).resolve().parents[2]

TOY_PACKAGE = {
    "__init__.py": '"""A toy kind: MNN\'s wheel under another key (its test)."""\n',
    "kind.py": '''"""The toy kind: MNN's wheel, described and run as the prebuilt kind's."""

from mnnrepro.engines.mnn_wheel.kind import PrebuiltEngine, describe_prebuilt


class ToyEngine(PrebuiltEngine):
    kind = "toy"
    config_key = "toy"

    @classmethod
    def describe(cls, name: str, spec: dict) -> dict:
        return {**describe_prebuilt(name, spec[cls.config_key]["pypi"]), "kind": cls.kind}
''',
}

TOY_CONFIG = """\
engines:
  toy-pypi:
    toy:
      pypi: "mnn==3.6.1"
variants:
  one-thread: {engine: toy-pypi}
  two-threads: {engine: toy-pypi}
"""

# the edits of existing files: (file, text after which the insertion goes, the insertion)
EDITS = [
    (
        "workflow/scripts/mnnrepro/engines/registry.py",
        "from mnnrepro.engines.ort_genai.kind import OrtGenaiEngine\n",
        "from mnnrepro.engines.toy.kind import ToyEngine\n",
    ),
    ("workflow/scripts/mnnrepro/engines/registry.py", "    OrtGenaiEngine,\n", "    ToyEngine,\n"),
    (
        "workflow/schemas/config.schema.yaml",
        "    description: how one MNN engine is obtained (exactly one source)\n    properties:\n",
        "      toy:\n        type: object\n        additionalProperties: false\n"
        "        required: [pypi]\n        properties:\n          pypi: {type: string}\n",
    ),
    (
        "workflow/schemas/config.schema.yaml",
        "      - required: [prebuilt]\n",
        "      - required: [toy]\n",
    ),
    ("workflow/schemas/records.schema.yaml", "kind: {enum: [prebuilt, ", "toy, "),
]


def listed_files() -> list[str]:
    """The existing files (or globs) the guide's numbered list says a new kind edits."""
    text = (ROOT / "docs" / "development.md").read_text()
    section = text.split("### Adding an engine kind", 1)[1].split("\n### ", 1)[0]
    items = re.findall(r"(?ms)^\d+\. (.*?)(?=^\d+\. |^\s*$)", section)
    return [path for item in items for path in re.findall(r"`([^`]+)`", item) if "/" in path]


def add_toy_kind(repo: Path) -> set[str]:
    """Write the toy kind's package and config, make the edits; return the existing files
    edited."""
    package = repo / "workflow" / "scripts" / "mnnrepro" / "engines" / "toy"
    package.mkdir()
    for name, text in TOY_PACKAGE.items():
        (package / name).write_text(text)
    (repo / "config" / "toy.yaml").write_text(TOY_CONFIG)
    for name, after, insertion in EDITS:
        path = repo / name
        text = path.read_text()
        assert text.count(after) == 1, f"{name}: the edit's anchor {after!r} moved"
        path.write_text(text.replace(after, after + insertion))
    return {name for name, _, _ in EDITS}


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory) -> tuple[Path, set[str]]:
    repo = copy_repository(ROOT, tmp_path_factory.mktemp("new-kind") / "repo")
    return repo, add_toy_kind(repo)


def test_the_guide_lists_every_existing_file_a_new_kind_edits(toy_repo):
    _, edited = toy_repo
    listed = listed_files()
    assert "workflow/scripts/mnnrepro/engines/registry.py" in listed and len(listed) >= 7
    assert [f for f in sorted(edited) if not any(fnmatch(f, pattern) for pattern in listed)] == []


def test_a_new_kind_is_planned_with_its_engines_records_and_runs(toy_repo):
    repo, _ = toy_repo
    proc = run_snakemake(repo, "-n", "--configfile", "config/config.yaml", "config/toy.yaml")
    assert re.search(r"results/engines/toy-pypi-[0-9a-f]{12}/engine\.json", proc.stdout)
    planned = dict(re.findall(r"(?m)^(\w+)\s+(\d+)$", proc.stdout.split("Job stats:")[1]))
    assert {"describe_engine", "push_to_device", "run_greedy", "run_bench"} <= set(planned)
    assert "mnn-pypi-" not in proc.stdout  # no variant runs the wheel's own engine now


def test_the_kind_checks_hold_with_the_new_kind(toy_repo):
    """The copy's own checks, run on the copy's package: nothing outside engines/ names the
    toy kind, and the records schema takes its records."""
    repo, _ = toy_repo
    checks = "nothing_outside or records_schema_accepts"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n0",
            "-p",
            "no:cacheprovider",
            "-k",
            checks,
            "tests/unit/test_engine_kinds.py",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout[-3000:]
