"""The control engine's model: a transformers checkpoint (synthetic or downloaded) converted to
GGUF with the pinned llama.cpp tree's own converter, then quantized to Q4_0 (the type KleidiAI's
kernels take) with its own llama-quantize. The record says what was done: converter, quantizer,
the pre-tokenizer registration (if any), the file's sha256, and its layout (what a decode step
reads and a prefill token computes, for the decode ceiling)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mnnrepro.errors import ReproError
from mnnrepro.fetch import publish_dir
from mnnrepro.files import sha256_file

CONVERTER = Path(__file__).with_name("gguf_convert_main.py")
MODEL_FILE = "model.gguf"
QUANT_TYPE = "Q4_0"


class GgufError(ReproError, RuntimeError):
    pass


def _run(cmd: list[str], log_file, env=None) -> str:
    log_file.write("$ " + " ".join(cmd) + "\n")
    log_file.flush()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    log_file.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise GgufError(
            f"`{Path(cmd[1] if cmd[0] == sys.executable else cmd[0]).name}` failed "
            f"(exit {proc.returncode}): " + " | ".join(tail)
        )
    return proc.stdout


def convert(checkpoint: str, source: dict, quantizer_dir: str, out_dir: str, log_file) -> dict:
    """results/models/<model>/gguf/model.gguf from checkpoint; returns gguf.json."""
    tree = source["path"]
    with publish_dir(out_dir) as staging:
        f16 = Path(staging) / "model-f16.gguf"
        printed = _run([sys.executable, str(CONVERTER), tree, str(checkpoint), str(f16)], log_file)
        quantize = str(Path(quantizer_dir, "llama-quantize"))
        env = {**os.environ, "LD_LIBRARY_PATH": str(Path(quantizer_dir).resolve())}
        _run([quantize, str(f16), str(Path(staging) / MODEL_FILE), QUANT_TYPE], log_file, env)
        f16.unlink()
    gguf = str(Path(out_dir) / MODEL_FILE)
    described = _run([sys.executable, str(CONVERTER), "--layout", tree, gguf], log_file)
    registered = [
        json.loads(line.split(": ", 1)[1])
        for line in printed.splitlines()
        if line.startswith("registered pre-tokenizer: ")
    ]
    return {
        "format": "gguf",
        "quant_type": QUANT_TYPE,
        "converter": f"{tree}/convert_hf_to_gguf.py",
        "llama_cpp_commit": source["commit"],
        "pre_tokenizer_registered": registered[0] if registered else None,
        "file": MODEL_FILE,
        "sha256": sha256_file(Path(out_dir) / MODEL_FILE),
        "bytes": (Path(out_dir) / MODEL_FILE).stat().st_size,
        "layout": json.loads(described.strip().splitlines()[-1]),
    }
