"""The raw files of a benchmark: where each invocation is kept
(`<raw_dir>/<variant>/rep-<block>.json`), what identifies the measurement it holds (the
engine's identity, model, runtime, env and bench settings: `plan_key`), when a kept one still
counts, and what a re-measurement sets aside (never deleted: its trace stays with the record)."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mnnrepro.engines.registry import RUNNER, RUNNER_MODULES
from mnnrepro.files import plain, read_json, sha256_file, sha256_text
from mnnrepro.runs.schedule import Invocation
from mnnrepro.runs.staging import staged_mask

if TYPE_CHECKING:
    from mnnrepro.design import Variant
    from mnnrepro.engines.registry import EngineRecord

log = logging.getLogger(__name__)


def plan_key(spec: dict) -> str:
    """Identity of one variant's measurement: changes whenever what it measures changes."""
    return sha256_text(json.dumps(spec, sort_keys=True, default=plain))


def engine_identity(record: EngineRecord) -> dict:
    """What of an engine a measurement depends on: its kind, its pin or its build definition
    (platform, flags, source commit), and the content of every file it runs. Not where it
    was built, when, or how long it took: a rebuild of the same inputs keeps every
    measurement, a changed artifact measures again."""
    return record.kind.identity(record)


def measurement_key(spec: dict, measured: dict) -> str:
    """The raw-record key: engine identity, runtime, env, model, runner, bench settings."""
    return plan_key(
        {
            **{k: v for k, v in spec.items() if k != "engine"},
            "engine": engine_identity(spec["engine"]),
            "bench": measured,
        }
    )


def raw_path(raw_dir: Path, inv: Invocation) -> Path:
    return Path(raw_dir) / inv.variant / f"rep-{inv.block:03d}.json"


def set_aside(path: Path) -> Path | None:
    """Keep a raw file that is about to be measured again (settings changed, damaged, or a
    re-measure) beside it as `rep-NNN.json.superseded-<UTC time>`: nothing measured is lost."""
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = path.with_name(f"{path.name}.superseded-{stamp}")
    n = 1
    while kept.exists():  # two set asides within a second
        n += 1
        kept = path.with_name(f"{path.name}.superseded-{stamp}-{n}")
    os.replace(path, kept)
    log.info("set aside %s (measured again)", kept)
    return kept


def supersede_reason(path: Path, key: str, remeasure: str) -> str:
    """Why the raw record at path (about to be set aside) is measured again."""
    try:
        old = read_json(path)
    except (OSError, ValueError):
        return "unreadable or damaged"
    if not isinstance(old, dict):
        return "unreadable or damaged"
    if remeasure and old.get("remeasure") != remeasure:
        return f"re-measured under label {remeasure!r}"
    if old.get("plan_key") != key:
        return "settings, engine or model changed"
    return f"earlier invocation ended with status {old.get('status')!r}"


def superseded_files(path: Path) -> list[dict]:
    """Every earlier measurement of this invocation set aside beside its raw file, oldest
    first, with its sha256 and why it was measured again (from the record that replaced it)."""
    siblings = sorted(path.parent.glob(f"{path.name}.superseded-*"))
    reasons = {}
    for record_path in [*siblings, path]:
        try:
            record = read_json(record_path)
        except (OSError, ValueError):
            continue
        replaced = record.get("supersedes") if isinstance(record, dict) else None
        if isinstance(replaced, dict) and "raw" in replaced:
            reasons[Path(replaced["raw"]).name] = replaced.get("reason", "")
    return [
        {
            "raw": str(sibling),
            "sha256": sha256_file(sibling),
            "superseded_at": sibling.name.split(".superseded-", 1)[1],
            "reason": reasons.get(sibling.name, "not recorded (set aside by an older version)"),
        }
        for sibling in siblings
    ]


def done_record(path: Path, key: str, remeasure: str = "") -> dict | None:
    """The raw record at path if it measured what key identifies, else None (run it).

    remeasure: a label (`--config remeasure=<label>`): a record not measured under that same
    label is measured again, so a re-measurement that was interrupted resumes with its label."""
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return None
    if remeasure and record.get("remeasure") != remeasure:
        return None
    # a deterministic crash of an emulated device is a result too: not run again
    done = record.get("status") == "ok" or (
        record.get("status") == "failed" and record.get("emulated")
    )
    return record if record.get("plan_key") == key and done else None


def supersede(path: Path, key: str, remeasure: str) -> dict:
    """Set the kept file at path aside before its invocation is measured again: where it went
    and why (the new record's `supersedes`)."""
    reason = supersede_reason(path, key, remeasure)
    return {"raw": str(set_aside(path)), "reason": reason}


def index_entry(inv: Invocation, path: Path) -> dict:
    """A run index's line for one kept raw file: the invocation, the file, its sha256 (the
    chain the analysis verifies), and every earlier measurement it superseded."""
    return {
        "invocation": inv.to_dict(),
        "raw": str(path),
        "sha256": sha256_file(path),
        "superseded": superseded_files(path),
    }


def mask_of(receipt: dict) -> dict:
    """What a variant that hides SME adds to its measurement's identity: the mask it preloads."""
    return {"hide_sme": True, "sme_mask_sha256": staged_mask(receipt)["sha256"]}


def variant_specs(
    variants: dict[str, Variant],
    engines: dict[str, EngineRecord],
    manifest_sha256: str,
    receipt: dict,
) -> dict:
    """What identifies each variant's measurement: engine (with file hashes), runtime, model,
    and for a variant that hides SME the SME mask's sha256 (from the push's receipt).

    An engine that runs through the Python runner depends on it too (it holds the timing
    loop), so its hash is part of the measurement: a changed runner measures everything again.
    """

    runner_sha256 = sha256_file(RUNNER)  # hashed once, not once per variant
    module_sha256 = {name: sha256_file(path) for name, path in RUNNER_MODULES.items()}

    def runner(record) -> dict:
        if not record.kind.through_runner(record):
            return {}
        modules = {m.name: module_sha256[m.name] for m in record.kind.runner_modules}
        return {"runner_sha256": runner_sha256, **({"runner_modules": modules} if modules else {})}

    return {
        name: {
            "engine": engines[variant.engine],
            "runtime": dict(variant.runtime),
            "env": variant.env,
            "model_manifest_sha256": manifest_sha256,
            **runner(engines[variant.engine]),
            **(mask_of(receipt) if variant.hide_sme else {}),
        }
        for name, variant in variants.items()
    }
