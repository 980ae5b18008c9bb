"""The source trees an experiment fetches: each source section's own (`mnn`, `llamacpp`), and
each built engine's, which may name its own `source` and `patches` (EngineKind.tree_of:
several MNN sources side by side). Each tree is fetched once, at
resources/<section>/<its key>/source.json, the key from its source, KleidiAI pin and patches
(toolchain/records.source_key)."""

from __future__ import annotations

from mnnrepro.engines.registry import KINDS
from mnnrepro.toolchain.records import receipt_of, source_key


class SourceTrees:
    def __init__(self, config: dict, engine_kinds: dict, built_engines: list[str]):
        self.sections = sorted({k.config_section for k in KINDS if k.from_source})
        own = [(s, config.get(s, {})) for s in self.sections]
        built = [
            (
                kind.config_section,
                kind.tree_of(config["engines"][e], config.get(kind.config_section, {})),
            )
            for e, kind in ((e, engine_kinds[e]) for e in built_engines)
        ]
        # (section, key) -> the tree: what fetch_source provides for {tree}/{source}
        self.trees = {(s, source_key(tree)): tree for s, tree in own + built}
        self.section_receipts = {s: receipt_of(s, tree) for s, tree in own}
        self.engine_receipts = {
            e: receipt_of(s, tree) for e, (s, tree) in zip(built_engines, built, strict=True)
        }

    def tree(self, section: str, key: str) -> dict:
        return self.trees.get((section, key), {})
