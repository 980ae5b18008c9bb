"""The vision phase on a device (docs/method.md "The vision phase"): which images a benchmark
asks about, staged like everything else, and what of them a measurement's key holds.

The image set is asked by the engines that take images (EngineKind.takes_images: the prebuilt
wheel's runner); the others run their text phases only, and their keys do not change with the
image set."""

from __future__ import annotations

from mnnrepro.engines.registry import kind_of_record
from mnnrepro.models.mnn_files import reads_images
from mnnrepro.runs.staging import stage_images


def vision_images(
    image_names: list[str], image_files: list[str], model_formats: list[str], model_dirs: list[str]
) -> list[tuple[str, str]]:
    """(name as configured, local file) of bench.vision.images where the model takes images
    (its MNN export holds a vision encoder); [] otherwise: no vision phase."""
    if not reads_images(dict(zip(model_formats, model_dirs, strict=True))):
        return []
    return list(zip(image_names, image_files, strict=True))


def with_vision_set(device, bench: dict, images: list[tuple[str, str]]) -> dict:
    """bench with `vision_set` (the staged images and the question; None without images),
    what the engines that take images ask in each invocation."""
    staged = list(stage_images(device, images).values())
    vision_set = {"text": bench["vision"]["text"], "images": staged} if staged else None
    return {**bench, "vision_set": vision_set}


def measured_vision(bench: dict, engine_record: dict) -> dict | None:
    """What a measurement's key holds of the vision phase: the question and the images by
    content, for an engine that asks them; None for one that does not, or no image set."""
    vision = bench.get("vision_set")
    if not vision or not kind_of_record(engine_record).takes_images:
        return None
    return {"text": vision["text"], "images": [i["sha256"] for i in vision["images"]]}
