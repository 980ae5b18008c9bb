"""Every engine kind, the kind of a config entry, and an engine record with its kind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mnnrepro.config import SME2_SETTINGS
from mnnrepro.engines.base import EngineKind
from mnnrepro.engines.executorch.kind import ExecutorchEngine
from mnnrepro.engines.llamacpp.kind import LlamaCppEngine
from mnnrepro.engines.mnn_source.kind import BuiltEngine
from mnnrepro.engines.mnn_wheel.kind import PrebuiltEngine
from mnnrepro.engines.ort_genai.kind import OrtGenaiEngine

if TYPE_CHECKING:
    from mnnrepro.design import Variant

KINDS: tuple[type[EngineKind], ...] = (
    PrebuiltEngine,
    BuiltEngine,
    LlamaCppEngine,
    OrtGenaiEngine,
    ExecutorchEngine,
)


def runner_files(kinds) -> tuple[Path, dict[str, Path]]:
    """The Python runner program (one, shared by the kinds that run through it) and, by file
    name, every module a kind's runner imports: staged beside it in one folder, where Python
    finds them. Two programs, or two modules of one name, cannot share that folder."""
    programs = {kind.runner_program for kind in kinds if kind.runner_program}
    modules: dict[str, Path] = {}
    for module in (m for kind in kinds for m in kind.runner_modules):
        if modules.setdefault(module.name, module) != module:
            raise TypeError(
                f"two runner modules named {module.name}: {modules[module.name]}, {module}"
            )
    if len(programs) != 1:
        names = [kind.__name__ for kind in kinds if kind.runner_program]
        raise TypeError(f"the kinds {names} name {len(programs)} runner programs, not one")
    return programs.pop(), modules


RUNNER, RUNNER_MODULES = runner_files(KINDS)
# every kind's gate tool sources (a folder each), in the kinds' order
GATE_TOOL_SOURCES: tuple[Path, ...] = tuple(k.gate_tool_source for k in KINDS if k.gate_tool_source)


def kind_of_record(record: Mapping) -> type[EngineKind]:
    """The kind of an engine record (engine.json / build.json: its `kind`)."""
    for kind in KINDS:
        if kind.kind == record.get("kind"):
            return kind
    raise ValueError(f"engine record of unknown kind {record.get('kind')!r}")


@dataclass(frozen=True, eq=False)
class EngineRecord:
    """An engine record (engine.json / build.json) as read, its kind looked up once where it is
    read (EngineRecord.of; engines/records.engine_records). What every stage reads of it is a
    field here; the rest of what was written (`as_written`) is its kind's to read, in engines/,
    and is what the record is written back as (files.plain)."""

    kind: type[EngineKind]
    as_written: Mapping

    @classmethod
    def of(cls, written: Mapping) -> EngineRecord:
        if isinstance(written, EngineRecord):
            return written
        return cls(kind_of_record(written), written)

    @property
    def name(self) -> str:
        """The engine's name (`engines.<name>`)."""
        return self.as_written["engine"]

    @property
    def version(self) -> str | None:
        return self.as_written.get("version")

    @property
    def platform(self) -> str:
        """What it is built or fetched for (`host`: this machine)."""
        return self.as_written.get("platform", "host")

    @property
    def target_arch(self) -> str | None:
        """The CPU architecture its code is for (aarch64, x86_64)."""
        return self.as_written.get("target_arch")

    @property
    def files(self) -> list[dict]:
        """Its files ({path, sha256, ...}) under results/engines/<key>/bin, where it has them."""
        return self.as_written.get("files", [])

    @property
    def compiler(self) -> dict | None:
        """A from-source engine's compiler (its version defines the build)."""
        return self.as_written.get("compiler")

    @property
    def ndk(self) -> dict | None:
        """The NDK an Android build used (its receipt)."""
        return self.as_written.get("ndk")


def kind_of_spec(spec: dict) -> type[EngineKind]:
    """The kind an `engines.<name>` config entry selects (its one key)."""
    for kind in KINDS:
        if kind.config_key in spec:
            return kind
    raise ValueError(f"engine config {sorted(spec)} names no engine kind")


def engine_for(record: EngineRecord, receipt: dict) -> EngineKind:
    """The engine a record describes, ready to run on the device of a push receipt."""
    return record.kind(record, receipt)


def kind_of_tree(tree: str) -> type[EngineKind]:
    """The from-source kind whose source tree `tree` is (its config section)."""
    for kind in KINDS:
        if kind.from_source and kind.config_section == tree:
            return kind
    raise ValueError(f"no engine kind is built from a source tree named {tree!r}")


def unread_settings(variants: dict[str, Variant], engines: dict[str, EngineRecord]) -> list[str]:
    """A variant's SME2 setting (config.SME2_SETTINGS) that its engine's binaries do not read
    (the record's `reads_settings`: an MNN version without the setting would run as if it
    were not given), one line each, naming the key; checked before any run."""
    problems = []
    for name, variant in sorted(variants.items()):
        record = engines[variant.engine]
        reads = record.as_written.get("reads_settings", [])
        for key in SME2_SETTINGS:
            if key in variant.runtime and key not in reads:
                problems.append(
                    f"config key `variants.{name}.runtime.{key}`: engine {record.name} "
                    f"({record.version or 'unknown version'}) does not read it (its "
                    f"libraries hold no `{key}`)"
                )
        problems += unread_session_options(name, variant, record)
    return problems


def unread_session_options(name: str, variant: Variant, record: EngineRecord) -> list[str]:
    """A variant's ONNX Runtime session options its engine does not read: every one for a
    kind that takes none, else each key its library does not hold (ONNX Runtime would ignore
    it silently), one line each naming the key. The kind's own SME switch is exempt only in a
    library with no KleidiAI kernel (the x86-64 wheel): there it has nothing to turn off and
    the pair runs the same code, which is what it is judged on (equality); a library with
    KleidiAI's kernels and without the switch would leave them on in the baseline."""
    asked = variant.runtime.get("session_options", {})
    key = f"variants.{name}.runtime.session_options"
    library = record.as_written.get("library", {})
    held = library.get("session_options")
    if asked and held is None:
        return [f"config key `{key}`: engine {record.name} ({record.kind.kind}) takes none"]
    nothing_to_switch = not library.get("kleidiai_kernels")
    return [
        f"config key `{key}.{option}`: engine {record.name} ({record.version}) "
        f"holds no such session option (ONNX Runtime would ignore it"
        + (", leaving KleidiAI's kernels on" if option == record.kind.sme_switch else "")
        + f"); its library holds "
        f"{', '.join(o for o in held if o.startswith(option.split('.')[0] + '.'))[:300]}"
        for option in sorted(asked)
        if option not in held and not (option == record.kind.sme_switch and nothing_to_switch)
    ]
