"""Shared fixtures: a real tiny synthetic model, built and exported once per test session."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))


def pytest_addoption(parser):
    parser.addoption("--run-device", action="store_true", help="run tests that need a phone")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-device"):
        return
    skip = pytest.mark.skip(reason="needs a physical phone: pass --run-device")
    for item in items:
        if "device" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A real MNN model: tiny seeded Qwen3, converted with llmexport (about 10 s)."""
    from mnnrepro.export import export_model
    from mnnrepro.synthetic import make_model

    base = tmp_path_factory.mktemp("tiny-model")
    make_model("tiny", 0, base / "hf")
    log = io.StringIO()
    manifest = export_model(str(base / "hf"), str(base / "mnn"), 4, 64, log)
    shutil.rmtree(base / "hf")
    (base / "export.log").write_text(log.getvalue())
    (base / "manifest.json").write_text(__import__("json").dumps(manifest))
    return base / "mnn"
