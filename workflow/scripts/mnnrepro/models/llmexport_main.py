"""Run MNN's exporter (llmexport, PyPI) as a program, safely.

Run by file path (``python llmexport_main.py <llmexport arguments>``); it imports nothing
from mnnrepro. Two problems of the published packages are handled here:

* llmexport 0.0.5's console script is broken: ``llmexport/llmexport.py`` imports
  ``utils.model`` as a top-level package. We put the package's own directory first on
  ``sys.path`` and load ``llmexport.py`` by file, then call its ``main()``. (``runpy``
  does not work: the exporter sets ``sys.argv = []``, which runpy then trips over.)
* The ``mnn`` wheel's converter imports ``MNN.tools.utils.log``, which runs
  ``pip install -U aliyun-log-python-sdk`` when that SDK is missing and then sends usage
  logs to a remote endpoint. Marking the module as absent in ``sys.modules`` makes that
  import fail; the converter then goes on without logging (it catches the ImportError)."""

from __future__ import annotations

import importlib.util
import os
import sys

BLOCKED_MODULES = ("MNN.tools.utils.log", "aliyun", "aliyun.log")


def block_telemetry() -> None:
    for name in BLOCKED_MODULES:
        sys.modules[name] = None  # `import name` now raises ImportError


def load_exporter():
    spec = importlib.util.find_spec("llmexport")
    if spec is None or spec.origin is None:
        raise SystemExit("llmexport is not installed (pip install llmexport==0.0.5)")
    package_dir = os.path.dirname(spec.origin)
    sys.path.insert(0, package_dir)
    script = os.path.join(package_dir, "llmexport.py")
    module_spec = importlib.util.spec_from_file_location("llmexport_cli", script)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    block_telemetry()
    exporter = load_exporter()
    sys.argv = ["llmexport", *argv]
    exporter.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
