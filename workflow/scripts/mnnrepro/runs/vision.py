"""The vision phase on a device (docs/vision.md): which images a benchmark
asks about, staged like everything else, and what of them a measurement's key holds.

The image set is asked by the engines that take images (EngineKind.takes_images: the prebuilt
wheel's runner in its benchmark command; an MNN build's mnn_vision as a second command after
llm_bench, EngineKind.vision_command); the others (llama-bench) run their text phases only,
and their keys do not change with the image set."""

from __future__ import annotations

import os

from mnnrepro.errors import DataError
from mnnrepro.models.formats import FORMATS
from mnnrepro.records import HINTS, read_record
from mnnrepro.runs.staging import stage_images
from mnnrepro.sections import Bench


def reads_images(manifest_path: str | os.PathLike, model_formats: list[str]) -> bool:
    """Whether the experiment asks a model images (image prompts in the gate, the vision
    phase): its manifest says it takes them (its MNN directory holds a vision encoder, decided
    once where the model is made) and one of the formats it runs in carries that encoder."""
    manifest = read_record(manifest_path, "model_manifest")
    if "takes_images" not in manifest:
        raise DataError(
            manifest_path, "says not whether the model takes images", HINTS["model_manifest"]
        )
    return manifest["takes_images"] and any(FORMATS[f].reads_images for f in model_formats)


def vision_phase_images(
    image_names: list[str], image_files: list[str], manifest: str, model_formats: list[str]
) -> list[tuple[str, str]]:
    """(name as configured, local file) of bench.vision.images where the model takes images
    (its manifest says so: reads_images); [] otherwise: no vision phase."""
    if not reads_images(manifest, model_formats):
        return []
    return list(zip(image_names, image_files, strict=True))


def with_vision_set(device, bench: Bench, images: list[tuple[str, str]], tool_records=()) -> Bench:
    """bench with `vision_set` (the staged images, the question and, per engine, the content
    of the tool it asks them with, from its gate-tool record; None without images), what the
    engines that take images ask in each invocation."""
    staged = list(stage_images(device, images).values())
    tools = {r["engine"]: {f["path"]: f["sha256"] for f in r["files"]} for r in tool_records}
    vision_set = (
        {"text": bench.vision["text"], "images": staged, "tools": tools} if staged else None
    )
    return bench.with_vision_set(vision_set)


def measured_vision(bench: Bench, engine_record: dict) -> dict | None:
    """What a measurement's key holds of the vision phase: the question, the images by
    content and, for a kind that asks them with a tool of its own (EngineKind.vision_tool),
    that tool by content; None for an engine that does not ask them, or no image set."""
    vision = bench.vision_set
    kind = engine_record.kind
    if not vision or not kind.takes_images:
        return None
    measured = {"text": vision["text"], "images": [i["sha256"] for i in vision["images"]]}
    if kind.vision_tool:
        tools = vision.get("tools", {}).get(engine_record.name, {})
        measured["tool_sha256"] = tools.get(kind.vision_tool)
    return measured


def with_measured_vision(measured: dict, bench: Bench, engine_record: dict) -> dict:
    """The settings a measurement's key holds (runs/raw_files.measurement_key), with the
    vision phase's (measured_vision) where the engine asks the images: the benchmark's and
    the profile's keys alike."""
    vision = measured_vision(bench, engine_record)
    return {**measured, **({"vision": vision} if vision else {})}
