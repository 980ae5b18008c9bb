"""Device-side: ONNX Runtime GenAI behind the calls the runner (python_runner.py, staged
beside this file) makes of MNN's ``Llm``: reset, forward of token ids returning the last
position's logits, the chat template and the tokenizer, the context length. genai's
``Generator.append_tokens`` computes the tokens appended; ``get_logits`` returns the last
position's logits. Imports nothing from mnnrepro: the standard library, numpy and
onnxruntime_genai (the engine's staged wheels, on PYTHONPATH)."""

from __future__ import annotations

import ctypes
import json
import platform
from importlib import metadata
from pathlib import Path


def import_genai():
    """onnxruntime_genai from the engine's staged wheels; one line where this Python cannot
    import them (the pinned wheels are built for one CPython: `ort_genai.wheels`)."""
    try:
        # the staged wheels', on the device's path
        import onnxruntime_genai
    except ImportError as err:
        raise SystemExit(
            f"onnxruntime_genai cannot be imported by Python {platform.python_version()} on "
            f"{platform.machine()} (config key `ort_genai.wheels`: the pinned wheels are built "
            f"for one CPython and machine): {err}"
        ) from None
    return onnxruntime_genai


class GenaiLogits:
    def __init__(self, values):
        self.values = values

    def read(self):
        return self.values


class GenaiContext:
    def __init__(self, generator):
        self.all_seq_len = generator.token_count()


class GenaiLlm:
    """An ONNX Runtime GenAI model behind the calls this runner makes of MNN's Llm. The
    runtime's thread_num is genai's intra_op_num_threads; its session_options are passed to
    ONNX Runtime through genai's config overlay (unknown keys pass through as session
    configuration entries, `mlas.disable_kleidiai` among them)."""

    def __init__(self, model_dir: str, runtime: dict):
        og = import_genai()

        config = og.Config(model_dir)
        options = {"intra_op_num_threads": int(runtime.get("thread_num", 4))}
        options.update(runtime.get("session_options", {}))
        config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
        self.og, self.model = og, og.Model(config)
        self.tokenizer = og.Tokenizer(self.model)
        self.generator = None

    def reset(self) -> None:
        self.generator = self.og.Generator(self.model, self.og.GeneratorParams(self.model))

    def forward(self, ids: list[int]) -> GenaiLogits:
        # the device's Python: loaded where logits are read
        import numpy as np

        self.generator.append_tokens(np.array([list(ids)], dtype=np.int32))
        return GenaiLogits(np.asarray(self.generator.get_logits()))

    @property
    def context(self) -> GenaiContext:
        return GenaiContext(self.generator)

    def apply_chat_template(self, prompt: str) -> str:
        messages = json.dumps([{"role": "user", "content": prompt}], ensure_ascii=False)
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True)

    def tokenizer_encode(self, text: str) -> list[int]:
        return [int(i) for i in self.tokenizer.encode(text)]


AT_HWCAP2, HWCAP2_SME, HWCAP2_SME2 = 26, 1 << 23, 1 << 37  # linux/arch/arm64 uapi hwcap.h


def hwcap2_line() -> str:
    """What the kernel tells this process of SME and SME2 (getauxval(AT_HWCAP2), where ONNX
    Runtime's cpuinfo reads them on Linux and Android; it prints no feature line itself), in
    MNN's `supports:` form so that it is read alike (engines/device_io.supported_features)."""
    machine = platform.machine()
    if machine not in ("aarch64", "arm64"):
        return f"The process supports (AT_HWCAP2, {machine}: no Arm features): sme:0, sme2:0"
    libc = ctypes.CDLL(None)
    libc.getauxval.restype = ctypes.c_ulong
    hwcap2 = libc.getauxval(AT_HWCAP2)
    sme, sme2 = int(bool(hwcap2 & HWCAP2_SME)), int(bool(hwcap2 & HWCAP2_SME2))
    return f"The process supports (AT_HWCAP2, what cpuinfo reads): sme:{sme}, sme2:{sme2}"


def version_beside(module, package: str) -> str:
    """The version of package as installed beside module (the staged wheels unpacked side by
    side: its dist-info in the same directory), read without importing it: ONNX Runtime's own
    Python binding is a second 27 MB library, whose import took 1.5 s of the 3.4 s an emulated
    invocation takes, only to say its version."""
    site = str(Path(module.__file__).resolve().parents[1])
    for dist in metadata.distributions(path=[site]):
        if dist.metadata["Name"] == package:
            return dist.version
    return ""


def genai_facts() -> dict:
    """The versions imported (from the staged wheels) and what the process is told of SME."""
    genai = import_genai()
    return {
        "onnxruntime_version": version_beside(genai, "onnxruntime"),
        "onnxruntime_genai_version": genai.__version__,
        "device_supports": hwcap2_line(),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
