"""Model formats, each declared once: the folder a model of that format lives in
(results/models/<model>/<name>/), its layout record (the decode ceiling's input), where a device
keeps it, and the file an engine loads from it. An engine kind names the format it reads
(EngineKind.model_format)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelFormat:
    name: str
    layout_file: str  # beside the model: results/models/<model>/<layout_file>
    device_suffix: str  # on a device: models/<model><device_suffix>
    config_file: str = ""  # the file an engine loads (MNN's config.json); "" none
    reads_images: bool = False  # its export carries the vision encoder the gate's images need

    def folder(self, model: str = "{model}") -> str:
        return f"results/models/{model}/{self.name}"


FORMATS: dict[str, ModelFormat] = {
    f.name: f
    for f in (
        # MNN's export keeps the device path it always had (models/<model>)
        ModelFormat("mnn", "layout.json", "", config_file="config.json", reads_images=True),
        ModelFormat("gguf", "layout-gguf.json", "-gguf"),
        ModelFormat("onnx", "layout-onnx.json", "-onnx"),  # genai's model directory
        ModelFormat("pte", "layout-pte.json", "-pte"),  # ExecuTorch's program and tokenizer
    )
}
