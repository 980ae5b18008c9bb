"""The models' side of the plan: which models come from where, and the paths and specs of their
checkpoints, directories, manifests and layouts, as the rules' input functions ask them (mixed
into Plan, whose models, formats and experiment they read)."""

from __future__ import annotations

from snakemake.io import expand

from mnnrepro.config import canonical
from mnnrepro.models.formats import FORMATS
from mnnrepro.models.spec import Model

LAYOUT_FILES = {name: f.layout_file for name, f in FORMATS.items()}


class ModelInputs:
    def _plan_models(self) -> None:
        self.model_entries = {m: Model.of(m, self.config["models"][m]) for m in self.models}
        self.synthetic_models = self.models_from("synthetic")
        self.downloaded_models = self.models_from("modelscope")
        self.exported_models = self.models_from("export")
        # models whose original weights are fetched or given: to export, or (beside an MNN
        # download, `checkpoint`) for the engines that convert it themselves
        self.checkpoint_models = sorted(
            m for m, model in self.model_entries.items() if model.weights is not None
        )
        self.convertible_models = sorted(set(self.synthetic_models) | set(self.checkpoint_models))

    def models_from(self, source: str) -> list[str]:
        """The models that come from source (models/spec.SOURCES)."""
        return [m for m, model in self.model_entries.items() if model.source == source]

    def model_spec(self, wildcards) -> dict:
        return canonical(self.config["models"][wildcards.model])

    def checkpoint(self, wildcards) -> str:
        """The transformers checkpoint llmexport converts: synthetic, downloaded, or local."""
        model = self.model_entries[wildcards.model]
        if model.synthetic is not None:
            return f"results/models/{wildcards.model}/hf"
        if "modelscope" in model.weights:
            return f"resources/checkpoints/{wildcards.model}"
        return model.weights["path"]

    def checkpoint_dirs(self, wildcards) -> list[str]:
        """The checkpoint a model was converted from, where the workflow has it (the vision
        encoder's dimensions are read from its config.json); none for a converted download."""
        return [self.checkpoint(wildcards)] if wildcards.model in self.convertible_models else []

    def model_dirs(self, wildcards) -> list[str]:
        return [FORMATS[fmt].folder(wildcards.model) for fmt in self.model_formats]

    def model_manifests(self, wildcards=None) -> list[str]:
        return expand(
            "{root}/{model}/manifest.json", root=[self.experiment.models_dir], model=self.models
        )

    def model_layouts(self, wildcards=None) -> list[str]:
        if not self.experiment.explains:
            return []
        root, names = [self.experiment.models_dir], [LAYOUT_FILES[f] for f in self.model_formats]
        return expand("{root}/{model}/{name}", root=root, model=self.models, name=names)
