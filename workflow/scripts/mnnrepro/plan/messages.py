"""What each job's message says about the pins, checks and intervals of this run, derived
from the resolved config in one place, so that a message names only what the rule really
pins, checks or computes (`tests/workflow/test_messages.py` holds every shipped config's dry
run against its config)."""

from __future__ import annotations

from mnnrepro.config import is_full_commit
from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.intervals import experiment_intervals, interval_name


def model_pins(spec: dict) -> str:
    """What a ModelScope download checks, in the words of its job message: a revision is
    pinned only as a full commit; file hashes are checked only where `files_sha256` names them
    (the manifest records every file's sha256 either way)."""
    revision = spec["revision"]
    if is_full_commit(revision):
        said = f"pinned revision {revision[:12]}"
    else:
        said = f"revision {revision!r}, not pinned: a branch or tag moves"
    pinned = len(spec.get("files_sha256") or {})
    if pinned:
        return f"{said}; {pinned} file hash(es) checked"
    return f"{said}; file hashes recorded, none checked (no files_sha256)"


def source_pins(tree: dict) -> str:
    """What fetch_source provides for a source tree, in the words of its job message: only the
    pins the config gives (a local checkout is recorded, not pinned)."""
    source = tree.get("source", {})
    if "commit" in source and "git" in source:
        said = f"commit {source['commit'][:12]}, HEAD verified"
    elif "sdist" in source:
        sdist = source["sdist"]
        said = f"sdist {sdist['version']}, sha256 pinned"
    elif "archive" in source:
        said = "archive, sha256 pinned"
    elif "path" in source:
        dirty = ", local changes allowed" if source.get("allow_dirty") else ", a dirty tree refused"
        said = f"the local checkout {source['path']}: its commit recorded, not pinned{dirty}"
    else:
        said = "no source configured"
    if tree.get("kleidiai"):
        said += f"; KleidiAI {tree['kleidiai'].get('version', '')}, checksum pinned"
    if tree.get("patches"):
        said += f"; {len(tree['patches'])} patch(es), sha256 pinned"
    return said


class JobMessages:
    """Input functions (wildcards -> text) for the rules' `message:` params."""

    def __init__(self, plan):
        self.plan = plan
        # the interval compute_summary gives every speedup and names in summary.csv
        self.interval = interval_name(experiment_intervals(plan.design))

    def model_pins(self, wildcards) -> str:
        return model_pins(self.plan.model_entries[wildcards.model].download)

    def checkpoint_pins(self, wildcards) -> str:
        return model_pins(self.plan.model_entries[wildcards.model].weights["modelscope"])

    def source_pins(self, wildcards) -> str:
        return source_pins(self.plan.sources.tree(wildcards.tree, wildcards.source))

    def archive_pins(self, wildcards) -> str:
        """What the engine's libraries are, and what pins them (each one's sha256, which the
        schema requires): its kind says (EngineKind.archives_said)."""
        spec = self.plan.config["engines"][self.plan.engine_of_key[wildcards.engine]]
        platform = self.plan.engine_platform(wildcards)
        return kind_of_spec(spec).archives_said(platform, self.plan.archive_pins(wildcards))
