"""What every job that runs on a device is handed, in one value: which device, what was pushed
to it, the model's manifest, the engines' records, the variants, the bench settings as this job
measures them, the vision phase's images and the engines' gate tools (the benchmark, a sweep
point and the kernel profile alike). A job loads it from its spec (DeviceJob.of)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from mnnrepro.design import Variant, variants_of
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.files import read_json, sha256_file
from mnnrepro.runs.vision import vision_phase_images
from mnnrepro.sections import Bench


@dataclass(frozen=True)
class DeviceJob:
    device_name: str
    device_spec: dict
    receipt: str  # the push's receipt (runs/staging.push_receipt)
    manifest: str  # the model's manifest: its sha256 enters every measurement's key
    engine_records: list[str]
    variants: dict[str, Variant]
    bench: Bench
    # (name as configured, local file) of the vision phase's images, for a vision model
    images: list[tuple[str, str]] = field(default_factory=list)
    gate_tools: list[str] = field(default_factory=list)  # the tool a kind asks images with

    @classmethod
    def of(cls, job) -> DeviceJob:
        """From the job (mnnrepro/job.Job) of rule run_bench, run_sweep or profile_kernels."""
        return cls(
            device_name=job.wildcards.device,
            device_spec=job.params.device,
            receipt=job.input.receipt,
            manifest=job.input.manifest,
            engine_records=list(job.input.engines),
            variants=variants_of(job.params.variants),
            bench=Bench.of(job.params.bench),
            images=vision_phase_images(
                job.params.image_names,
                job.input.images,
                job.input.manifest,
                job.params.model_formats,
            ),
            gate_tools=list(job.input.gate_tools),
        )

    @cached_property
    def records(self) -> dict[str, dict]:
        """Record path -> the engine record it holds, read once."""
        return {path: EngineRecord.of(read_json(path)) for path in self.engine_records}

    def engines(self) -> dict[str, dict]:
        """Engine name -> its record."""
        return {record.name: record for record in self.records.values()}

    def built_dirs(self) -> dict[str, str]:
        """Engine name -> the directory of its built files (beside its record)."""
        return {r.name: str(Path(path).parent / "bin") for path, r in self.records.items()}

    def manifest_sha256(self) -> str:
        return sha256_file(self.manifest)

    def tools(self) -> list[dict]:
        return [read_json(path) for path in self.gate_tools]
