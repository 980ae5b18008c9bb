"""A model entry (`models.<name>`) as one type, read once (Model.of): where the model comes
from (a seeded synthetic checkpoint, an MNN export downloaded from ModelScope, or an llmexport
conversion of original weights) and where its original weights are, for the engines that
convert the model themselves. The plan and every model job ask it."""

from __future__ import annotations

from dataclasses import asdict, dataclass

SOURCES = ("synthetic", "modelscope", "export")  # exactly one per model (the schema's oneOf)


@dataclass(frozen=True)
class Synthetic:
    shape: str  # models/shapes.py: SHAPES or VISION_SHAPES
    seed: int
    quant_bit: int  # llmexport's --quant_bit and --quant_block for its MNN export
    quant_block: int

    @property
    def settings(self) -> dict:
        """As the model's manifest records them (`spec`)."""
        return asdict(self)


@dataclass(frozen=True)
class Model:
    name: str
    source: str  # one of SOURCES
    synthetic: Synthetic | None  # a synthetic model's shape and seed
    download: dict | None  # the ModelScope repository of a downloaded MNN export
    export: dict | None  # llmexport's settings of an exported model
    weights: dict | None  # where its original weights are: {"modelscope": repo} or {"path": dir}

    @classmethod
    def of(cls, name: str, spec: dict) -> Model:
        """From the resolved config's entry (its defaults filled by the schema's check: the
        model jobs' environment carries no schema library)."""
        (source,) = [s for s in SOURCES if s in spec]
        synthetic = spec.get("synthetic")
        weights = spec["export"]["from"] if "export" in spec else spec.get("checkpoint")
        return cls(
            name,
            source,
            Synthetic(**synthetic) if synthetic else None,
            spec.get("modelscope"),
            spec.get("export"),
            weights,
        )

    def repository(self, route: str) -> dict:
        """The ModelScope repository a download fetches: the MNN export, used as downloaded
        (route `model`), or the original weights (`checkpoint`: to export, or for the engines
        that convert the model themselves)."""
        return self.download if route == "model" else self.weights["modelscope"]


def checkpoint_problems(models: dict, engines: dict, engine: str, converter: str) -> list[str]:
    """A model downloaded as an MNN export has no transformers checkpoint for an engine kind
    that converts the checkpoint itself: one line naming `models`."""
    without = sorted(
        m for m, model in models.items() if "modelscope" in model and "checkpoint" not in model
    )
    if not without:
        return []
    return [
        f"config key `models`: {without} are MNN exports downloaded as they are; the "
        f"{engine} engines {sorted(engines)} need the transformers checkpoint {converter} "
        "converts (`synthetic`, `export`, or `checkpoint.modelscope` beside `modelscope`)"
    ]
