"""Replay: restore an archive's records so that the ordinary rules re-derive its results.

Needs no phone, no toolchain, no engine and no network: only the archived raw invocation
records, greedy answers, checks, facts, engine records and model manifests, and the archived
resolved config (validated like a live one by the workflow). Only members that
MANIFEST.sha256 lists, with matching hashes, at relative paths inside the archive, are used.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from mnnrepro.archive.pack import verify_manifest
from mnnrepro.config import load_yaml
from mnnrepro.engines.registry import KINDS, EngineRecord
from mnnrepro.errors import DataError
from mnnrepro.models.formats import FORMATS
from mnnrepro.records import read_record
from mnnrepro.unpack import check_member_name, safe_extract

CONFIG_NAME = "config.resolved.yaml"
MANIFEST_NAME = "MANIFEST.sha256"
# results/<experiment>/<kind>/... (the sweep's run indexes and raw records included)
RECORDS = (
    *("runs", "greedy", "validity", "devices", "raw", "bandwidth", "sweep/runs", "sweep/raw"),
    *("profiles", "engine_tests"),
)
RAW_DIRS = {"runs": "raw", "sweep/runs": "sweep/raw"}  # where each kind of index's raw files are
ENGINE_RECORDS = tuple(sorted({kind.record_name for kind in KINDS}))  # each kind's record


def replay_name(archive: str) -> str:
    return Path(archive).name.removesuffix(".tar.gz")


def manifest_entries(text: str) -> dict[str, str]:
    entries = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        check_member_name(name)
        entries[name] = digest
    return entries


@contextlib.contextmanager
def open_archive(archive: str):
    """The archive as a tarfile; what is not a readable .tar.gz, or lacks a member asked for,
    is a DataError naming the archive (and the member), not a library's traceback."""
    try:
        with tarfile.open(archive) as tar:
            yield tar
    except tarfile.TarError as err:
        raise DataError(archive, f"not a readable results archive (.tar.gz): {err}") from None
    except KeyError as err:  # extractfile() of a member that is not there
        raise DataError(archive, f"no member {err.args[0]!r}") from None
    except OSError as err:
        raise DataError(archive, f"cannot be read: {err.strerror or err}") from None


def archived_names(archive: str) -> set[str]:
    """The member names MANIFEST.sha256 lists (read without extracting anything)."""
    with open_archive(archive) as tar:
        return set(manifest_entries(tar.extractfile(MANIFEST_NAME).read().decode()))


def archived_member(archive: str, name: str) -> bytes | None:
    """A member's bytes, read without extracting anything else and checked against
    MANIFEST.sha256; None where the manifest lists no such member."""
    with open_archive(archive) as tar:
        listed = manifest_entries(tar.extractfile(MANIFEST_NAME).read().decode())
        if name not in listed:
            return None
        data = tar.extractfile(name).read()
    if hashlib.sha256(data).hexdigest() != listed[name]:
        raise DataError(archive, f"{name} does not match the archive's {MANIFEST_NAME}")
    return data


def archived_config(archive: str) -> dict:
    """The archive's resolved config, as archived (the plan completes it with the settings
    it predates, plan/experiment.PREDATED_SETTINGS, then validates it like a live config)."""
    return config_of(archive, archived_member(archive, CONFIG_NAME))


def config_of(archive: str, data: bytes | None) -> dict:
    """The resolved config from its member's bytes, already checked against the manifest
    (None: the manifest lists no config)."""
    if data is None:
        raise DataError(archive, f"{CONFIG_NAME} is not in the archive's {MANIFEST_NAME}")
    config = load_yaml(data.decode("utf-8"), f"{archive}:{CONFIG_NAME}")
    if not isinstance(config, dict):
        raise DataError(archive, f"{CONFIG_NAME} is not a config (a mapping of keys)")
    return config


def check_raw_paths(archive: str, root: Path, experiment: str) -> None:
    """Every raw record a run index names (and every earlier measurement it superseded) lies
    inside the archive's own raw directory of that kind; DataError naming the index if not."""
    source = root / "results" / experiment
    for kind, raw_dir in RAW_DIRS.items():
        inside = ("results", experiment, *raw_dir.split("/"))
        for index in sorted((source / kind).rglob("*.json")):
            for entry in read_record(index, "run_index")["runs"]:
                for named in [entry["raw"], *(s["raw"] for s in entry.get("superseded", []))]:
                    raw = PurePosixPath(named)
                    if ".." in raw.parts or raw.parts[: len(inside)] != inside:
                        raise DataError(
                            archive,
                            f"{index.relative_to(root)} names raw record {named!r}, which "
                            f"is not inside the archive's results/{experiment}/{raw_dir}/",
                        )


def archived_engine_records(archive: str, root: Path, wanted: dict[str, str]) -> dict[str, Path]:
    """engine name -> its archived record, for every engine `wanted` names; DataError naming
    the ones the archive lacks."""
    found = {}
    for path in sorted((root / "results" / "engines").glob("*/*.json")):
        if path.name not in ENGINE_RECORDS:
            continue
        record = EngineRecord.of(read_record(path, "engine"))
        if record.name in wanted:
            found[record.name] = path
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise DataError(archive, f"no archived record of engine(s) {missing}")
    return found


def restore(
    archive: str,
    results: str,
    experiment: str,
    engine_records: dict[str, str],
    models_dir: str,
) -> list[str]:
    """Copy the archived records of `experiment` to `results/<kind>/...`, every engine record
    to the path the workflow expects for it now (by engine name), and every model manifest
    and layout to `models_dir/<model>/`. Returns what was restored."""
    restored = []
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        with open_archive(archive):  # a readable tarball, else one line naming it
            pass
        names = set(safe_extract(archive, tmp))
        root = Path(tmp)
        listed = manifest_entries((root / MANIFEST_NAME).read_text())
        unlisted = sorted(n for n in names if n != MANIFEST_NAME and n not in listed)
        if unlisted:
            raise DataError(archive, f"members not in {MANIFEST_NAME}: {unlisted[:5]}")
        verify_manifest(root, label=archive)
        source = root / "results" / experiment
        for kind in RECORDS:
            if (source / kind).is_dir():
                shutil.copytree(source / kind, Path(results) / kind, dirs_exist_ok=True)
                restored.append(f"{results}/{kind}")
        check_raw_paths(archive, root, experiment)
        found = archived_engine_records(archive, root, engine_records)
        for name, dest in engine_records.items():
            Path(dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found[name], dest)
            restored.append(dest)
        for name in ("manifest.json", *(f.layout_file for f in FORMATS.values())):
            for record in sorted((root / "results" / "models").glob(f"*/{name}")):
                dest = Path(models_dir) / record.parent.name / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(record, dest)
                restored.append(str(dest))
    return restored


def raw_path_mapper(archived_root: str, restored_root: str):
    """Raw paths in restored run indexes name the archived location; read them here."""

    def resolve(raw: str) -> str:
        return restored_root + raw.removeprefix(archived_root) if archived_root else raw

    return resolve
