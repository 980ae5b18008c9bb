"""What an MNN LLM model directory holds (no exporter, no engine: rules on any device read it)."""

from __future__ import annotations

import os
from pathlib import Path

from mnnrepro.files import read_json

# Files an MNN LLM directory must hold for llm_demo / llm_bench / MNN.llm to load it.
REQUIRED_FILES = ("config.json", "llm.mnn", "llm.mnn.weight", "llm_config.json", "tokenizer.mtok")

# ... and a vision model (llm_config.json `is_visual`) its vision encoder too.
VISION_FILES = ("visual.mnn",)


def is_vision_model(model_dir: str | os.PathLike) -> bool:
    """Whether MNN treats the model as multimodal (it then loads visual.mnn for images)."""
    llm_config = Path(model_dir, "llm_config.json")
    return llm_config.is_file() and bool(read_json(llm_config).get("is_visual"))


def missing_files(model_dir: Path) -> list[str]:
    required = REQUIRED_FILES + (VISION_FILES if is_vision_model(model_dir) else ())
    return [f for f in required if not (model_dir / f).is_file()]
