"""The ONNX Runtime GenAI kind, the third stack: onnxruntime and onnxruntime-genai's pinned
PyPI wheels for one platform (fetched and unpacked by the rule fetch_ort_genai:
toolchain/ort_genai.py), staged on the device by hash and imported there by the runner
(runs/prebuilt_runner.py, `--engine ort-genai`, through genai's Python API), on the model
genai's own builder converted (models/onnx_genai.py).

KleidiAI's kernels are chosen at run time by ONNX Runtime's MLAS; the session option
`mlas.disable_kleidiai` "1" (a variant's `runtime.session_options`) turns all of them off in
the same library, SME2 and KleidiAI's NEON kernels alike, and MLAS's own NEON kernels run
instead. The library is stripped: its KleidiAI kernels are named for the profiles from its
kernel tables (devices/stripped.py)."""

from __future__ import annotations

from pathlib import Path

from mnnrepro.engines.base import files_of, staged_files
from mnnrepro.engines.prebuilt import PrebuiltEngine
from mnnrepro.models.spec import checkpoint_problems

MODEL_FORMAT = "onnx"  # results/models/<model>/onnx: genai's model directory
SWITCH = "mlas.disable_kleidiai"  # the session option (toolchain/ort_genai.SWITCH)


class OrtGenaiEngine(PrebuiltEngine):
    kind = "ort-genai"
    config_key = "ort_genai"
    record_name = "wheels.json"
    model_format = MODEL_FORMAT
    stages_files = True
    fetches_wheels = True
    integer_env = ()
    takes_images = False
    sme2_settings = False
    sme2_vector_lengths_bits = ()  # KleidiAI's SME2 kernels are vector-length agnostic
    sme_switch = SWITCH
    switch_off = "1"  # the switch's value in the baseline: KleidiAI off
    sme_kernels_are = "SME2 kernels named in its library's kernel tables"
    switch_turns_off = "all of KleidiAI's kernels, SME2 and NEON: MLAS's own NEON kernels run"
    runner_engine = "ort-genai"
    runner_modules = ("genai_llm.py",)  # runs/genai_llm.py: genai behind the runner's calls
    no_test_suite = "the PyPI wheels ship no test suite"

    def __init__(self, record: dict, receipt: dict):
        super().__init__(record, receipt)
        self.dir = receipt["engines"][record["engine"]]

    @classmethod
    def platform(cls, spec: dict) -> str:
        return spec[cls.config_key]["platform"]

    @classmethod
    def config_problems(cls, engines: dict[str, dict], tree: dict, models: dict) -> list[str]:
        return checkpoint_problems(models, engines, "ONNX Runtime GenAI", "genai's builder")

    @classmethod
    def identity(cls, record: dict) -> dict:
        return {
            "kind": cls.kind,
            "platform": record["platform"],
            "wheels": sorted((w["file"], w["sha256"]) for w in record["wheels"]),
            "files": files_of(record),
        }

    @classmethod
    def device_files(cls, record: dict, receipt: dict) -> dict[str, str]:
        return staged_files(record, receipt)

    @classmethod
    def switch_value(cls, variant) -> str | None:
        return variant.runtime.get("session_options", {}).get(cls.sme_switch)

    @classmethod
    def needs_sme2(cls, record: dict) -> bool:
        return bool(record["library"]["sme2_kernels"])

    @classmethod
    def sme2_impossible(cls, record: dict) -> bool:
        return not record["library"]["sme2_kernels"]  # the x86-64 wheel has no KleidiAI

    @classmethod
    def sme_kernel_count(cls, record: dict) -> int:
        return len(record["library"]["sme2_kernels"])

    @classmethod
    def sme2_kernel_names(cls, record: dict) -> list[str]:
        """KleidiAI's SME2 kernels as a profile names them (devices/stripped.py): each one's
        run function and its assembly body."""
        kernels = record["library"]["sme2_kernels"]
        return sorted(kernels + ["kai_kernel_" + k.removeprefix("kai_run_") for k in kernels])

    @classmethod
    def profiled_libraries(cls, record: dict, built_dir: str, device) -> dict[str, str]:
        library = record["library"]["path"]
        return {Path(library).name: str(Path(built_dir) / library)}

    @classmethod
    def model_path(cls, receipt: dict) -> str:
        return receipt["models"][MODEL_FORMAT]

    def runner_env(self) -> dict:
        return {"PYTHONPATH": self.dir}  # the staged wheels
