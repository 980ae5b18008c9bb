"""Convert a transformers checkpoint to an MNN LLM directory with llmexport, and describe it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from importlib import metadata
from pathlib import Path

from mnnrepro.files import file_table, sha256_file
from mnnrepro.models.mnn_files import is_vision_model, missing_files
from mnnrepro.models.spec import Model

RUNNER = Path(__file__).with_name("llmexport_main.py")


# Exporter by-products that are not part of the model.
SCRATCH = ("onnx", "llm.mnn.json")


def llmexport_args(
    src: str, dst: str, quant_bit: int, quant_block: int, extra: list[str] = ()
) -> list[str]:
    return [
        "--path",
        str(src),
        "--export",
        "mnn",
        "--dst_path",
        str(dst),
        "--quant_bit",
        str(quant_bit),
        "--quant_block",
        str(quant_block),
        # a path that never exists makes llmexport use the wheel's converter
        "--mnnconvert",
        "/nonexistent/MNNConvert",
        *extra,
    ]


def export_env() -> dict:
    env = dict(os.environ)
    # Belt and braces: even if some code path still tried to pip install, it gets no index.
    env.update(PIP_NO_INDEX="1", PIP_NO_INPUT="1", TOKENIZERS_PARALLELISM="false")
    return env


def run_llmexport(args: list[str], log, cwd: str) -> None:
    cmd = [sys.executable, str(RUNNER), *args]
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    result = subprocess.run(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env=export_env(),
        check=False,
    )
    log.write(result.stdout)
    export_log = Path(cwd, ".export.log")
    if export_log.exists():
        log.write(
            "--- converter output (.export.log) ---\n" + export_log.read_text(errors="replace")
        )
    if result.returncode != 0:
        raise RuntimeError(f"llmexport failed with exit code {result.returncode}; see the log")


def normalize_export_args(path: Path, src: Path, dst: Path) -> None:
    """llmexport records absolute paths; replace them so the same model gives the same bytes."""
    if not path.exists():
        return
    args = json.loads(path.read_text(encoding="utf-8"))
    for key, value in args.items():
        if isinstance(value, str):
            args[key] = value.replace(str(dst), "<dst>").replace(str(src), "<src>")
    path.write_text(json.dumps(args, indent=4, sort_keys=True) + "\n", encoding="utf-8")


_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def stamp_model_uuids(model_dir: Path) -> dict[str, str]:
    """Replace the random UUID MNN's converter writes near the start of every *.mnn file.

    The converter stamps a fresh uuid4 into every model file (MNN.get_model_uuid reads it;
    llm.mnn, and visual.mnn of a vision model), so two exports of the same weights differ.
    We put a UUID derived from the file's other bytes and its weight file in its place (same
    length, so the flatbuffer stays valid): same model, same bytes.
    """
    stamped = {}
    for path in sorted(model_dir.glob("*.mnn")):
        data = path.read_bytes()
        match = _UUID.search(data, 0, 4096)
        if match is None:
            continue
        digest = hashlib.sha256(path.name.encode())
        weight = path.with_name(path.name + ".weight")
        if weight.is_file():
            digest.update(sha256_file(weight).encode())
        digest.update(data[: match.start()] + data[match.end() :])
        stamped[path.name] = str(uuid.UUID(bytes=digest.digest()[:16], version=5))
        path.write_bytes(data[: match.start()] + stamped[path.name].encode() + data[match.end() :])
    return stamped


def export_model(
    src: str, dst: str, quant_bit: int, quant_block: int, log, extra: list[str] = ()
) -> dict:
    """Export src into dst (replaced); returns the manifest describing dst."""
    src, dst = Path(src).resolve(), Path(dst).resolve()
    if dst.exists():
        shutil.rmtree(dst)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=dst.parent))
    try:
        args = llmexport_args(src, staging / "model", quant_bit, quant_block, extra)
        run_llmexport(args, log, cwd=str(staging))
        model_dir = staging / "model"
        missing = missing_files(model_dir)
        if missing:
            raise RuntimeError(f"llmexport finished but {missing} are missing in {model_dir}")
        normalize_export_args(model_dir / "export_args.json", src, model_dir)
        stamp_model_uuids(model_dir)
        for name in SCRATCH:
            target = model_dir / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        os.replace(model_dir, dst)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {
        "exporter": {
            "package": "llmexport",
            "version": metadata.version("llmexport"),
            "mnn_converter": "mnn " + metadata.version("mnn"),
            "arguments": llmexport_args("<src>", "<dst>", quant_bit, quant_block, extra),
        },
        "files": file_table(dst),
        "takes_images": is_vision_model(dst),
    }


def export_settings(model: Model) -> tuple[str, dict, list[str]]:
    """A model -> (source kind, its settings, extra llmexport arguments)."""
    if model.synthetic is not None:
        return "synthetic", model.synthetic.settings, []
    settings = model.export
    extra = []
    for flag in ("hqq", "awq", "sym"):
        if settings.get(flag):
            extra.append(f"--{flag}")
    if settings.get("lm_quant_bit"):
        extra += ["--lm_quant_bit", str(settings["lm_quant_bit"])]
    return "export", settings, extra + list(settings.get("extra_args", []))
