"""ONNX Runtime GenAI's model builder, run as the program it is (its `__main__`), from the
unpacked onnxruntime-genai wheel given as the first argument, in this job's environment (which
holds what the builder imports: onnx_ir, onnx, torch, transformers, onnxruntime). The rest of
the arguments are the builder's. Started by onnx_genai.convert."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    models = Path(argv[0]) / "onnxruntime_genai" / "models"
    sys.path.insert(0, str(models))  # the builder imports its sibling modules by their names
    if importlib.util.find_spec("builder") is None:
        raise SystemExit(f"{argv[0]}: the onnxruntime-genai wheel holds no models/builder.py")
    sys.argv = [str(models / "builder.py"), *argv[1:]]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
