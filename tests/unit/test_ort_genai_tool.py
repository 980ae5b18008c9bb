"""ort_genai_tool's declarations of genai's C API (engines/ort_genai/gate_tool/oga_api.h) against
the header of the version a phone runs: onnxruntime-genai 0.15.2's ort_genai_c.h, as its
Android archive ships it (tests/data/ort_genai/ort_genai_c-0.15.2.h: `headers/ort_genai_c.h`
of package/Plugins/Android/onnxruntime-genai.aar in the pinned npm tarball
com.github.asus4.onnxruntime-genai-0.4.9.tgz, sha256 80d03d6a...; MIT, Microsoft). The
workflow's build for a phone includes that header the same way (OGA_C_HEADER, from the
unpacked AAR); the NDK is not reachable here, so the tool is compiled with the arm64 cross
compiler, which checks the same declarations."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mnnrepro.engines.ort_genai.c_api_runner import TOOL_SOURCE as ORT_GENAI_TOOL_SOURCE
from mnnrepro.toolchain.tools import GATE_COMMON

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("aarch64-linux-gnu-g++") is None,
        reason="needs the arm64 cross compiler (.ci/run installs g++-aarch64-linux-gnu)",
    ),
]


def compiled(root, tool_dir) -> subprocess.CompletedProcess:
    header = root / "tests/data/ort_genai/ort_genai_c-0.15.2.h"
    argv = ["aarch64-linux-gnu-g++", "-std=c++17", "-fsyntax-only", f'-DOGA_C_HEADER="{header}"']
    argv += [f"-I{GATE_COMMON}", f"-I{tool_dir}", str(tool_dir / "ort_genai_tool.cpp")]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_the_c_api_tool_compiles_against_the_header_of_the_genai_its_phone_runs(root):
    proc = compiled(root, ORT_GENAI_TOOL_SOURCE)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_declaration_that_differs_from_the_version_fails_the_build_naming_it(root, tmp_path):
    tool = tmp_path / "ort_genai_tool"
    shutil.copytree(ORT_GENAI_TOOL_SOURCE, tool)
    api = tool / "oga_api.h"
    # a const dropped: the tool's own calls still compile (it passes a non-const model), the
    # version's header declares it const
    declared = "OgaResult* OgaCreateTokenizer(const OgaModel* model"
    assert declared in api.read_text()
    api.write_text(api.read_text().replace(declared, declared.replace("const ", "")))
    proc = compiled(root, tool)
    assert proc.returncode != 0 and "OgaCreateTokenizer" in proc.stderr
