"""Every engine kind, and the kind of a config entry or an engine record."""

from __future__ import annotations

from mnnrepro.engines.base import EngineKind
from mnnrepro.engines.llamacpp import LlamaCppEngine
from mnnrepro.engines.mnn_build import BuiltEngine
from mnnrepro.engines.prebuilt import PrebuiltEngine

KINDS: tuple[type[EngineKind], ...] = (PrebuiltEngine, BuiltEngine, LlamaCppEngine)


def kind_of_record(record: dict) -> type[EngineKind]:
    """The kind of an engine record (engine.json / build.json: its `kind`)."""
    for kind in KINDS:
        if kind.kind == record.get("kind"):
            return kind
    raise ValueError(f"engine record of unknown kind {record.get('kind')!r}")


def kind_of_spec(spec: dict) -> type[EngineKind]:
    """The kind an `engines.<name>` config entry selects (its one key)."""
    for kind in KINDS:
        if kind.config_key in spec:
            return kind
    raise ValueError(f"engine config {sorted(spec)} names no engine kind")


def engine_for(record: dict, receipt: dict) -> EngineKind:
    """The engine a record describes, ready to run on the device of a push receipt."""
    return kind_of_record(record)(record, receipt)


def kind_of_tree(tree: str) -> type[EngineKind]:
    """The from-source kind whose source tree `tree` is (its config section)."""
    for kind in KINDS:
        if kind.from_source and kind.source_section == tree:
            return kind
    raise ValueError(f"no engine kind is built from a source tree named {tree!r}")


def unread_settings(variants: dict, engines: dict[str, dict]) -> list[str]:
    """A variant's SME2 setting (config.SME2_SETTINGS) that its engine's binaries do not read
    (the record's `reads_settings`: an MNN version without the setting would run as if it
    were not given), one line each, naming the key; checked before any run."""
    from mnnrepro.config import SME2_SETTINGS

    problems = []
    for name, variant in sorted(variants.items()):
        record = engines[variant["engine"]]
        reads = record.get("reads_settings", [])
        for key in SME2_SETTINGS:
            if key in variant.get("runtime", {}) and key not in reads:
                problems.append(
                    f"config key `variants.{name}.runtime.{key}`: engine {record['engine']} "
                    f"({record.get('version', 'unknown version')}) does not read it (its "
                    f"libraries hold no `{key}`)"
                )
    return problems
