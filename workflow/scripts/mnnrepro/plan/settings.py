"""The settings the rules hand their jobs, read once from the resolved config (live or
replayed; the pairs, statistics and repetitions a judging job gets are the design's,
Plan.design_spec): each section canonical (sorted keys), so that a job's params change, and the job
reruns, exactly when a setting it is given changes. Rules read these, never the config."""

from __future__ import annotations

from dataclasses import dataclass

from mnnrepro.config import canonical
from mnnrepro.design import SECTIONS, design_of_variant
from mnnrepro.phases import PREDICTION_PHASES
from mnnrepro.plan.prediction import llvm_mca_pins


@dataclass(frozen=True)
class Settings:
    bench: dict  # what one invocation measures and how often (with the sweep)
    correctness: dict  # the gate's prompts and thresholds
    attribution: dict  # profiling: enabled, devices, rates, thresholds
    bandwidth: dict  # the bandwidth probe's settings
    engine_tests: dict  # the engines' own tests: which, how long, at which precision
    ndk_pin: dict  # toolchains.ndk: the NDK's URL and checksum
    emulation_pins: dict  # toolchains.emulation: QEMU's packages and their hashes
    emulation_reference: str  # emulation.reference: the device emulated CPUs are checked against
    remeasure: str  # --config remeasure=...: which kept invocations to measure again
    prediction: dict  # the phone's gain predicted from the emulated mix (empty: none)
    llvm_mca_pins: dict  # its cost model's pinned llvm-mca, where it prices per instruction

    @classmethod
    def of(cls, config: dict) -> Settings:
        toolchains = config.get("toolchains", {})
        return cls(
            bench=canonical(config["bench"]),
            correctness=canonical(config["correctness"]),
            # a prediction subtracts the start-up both phases' profiles share: profiled too,
            # on the device it predicts from
            attribution=canonical({**config["attribution"], **startup_devices(config)}),
            bandwidth=canonical(config.get("bandwidth", {})),
            engine_tests=canonical(config.get("engine_tests", {})),
            ndk_pin=canonical(toolchains.get("ndk", {})),
            emulation_pins=canonical(toolchains.get("emulation", {})),
            emulation_reference=config.get("emulation", {}).get("reference", ""),
            remeasure=str(config.get("remeasure", "")),
            prediction=canonical(config.get("prediction", {})),
            llvm_mca_pins=canonical(llvm_mca_pins(config.get("prediction"))),
        )

    @property
    def gate_prompts(self) -> list[str]:
        """The gate's text prompts alone: what a conversion that encodes them beside its model
        is given (a change of another gate setting converts nothing again)."""
        return list(self.correctness["prompts"])

    @property
    def profiler(self) -> dict:
        """What the profiler needs (the checks' thresholds are the validity rule's): its rate,
        and the device a prediction's own profiles are taken on with their phases (absent
        without a prediction)."""
        keys = ("sample_hz", "startup_devices", "prediction_phases")
        return {k: v for k, v in self.attribution.items() if k in keys}


def startup_devices(config: dict) -> dict:
    """The devices a prediction's own profiles are taken on (a prediction's; none without one)
    and which (a change of them profiles what is missing again)."""
    device = config.get("prediction", {}).get("device")  # a registered one: none
    if not device:
        return {}
    return {"startup_devices": [device], "prediction_phases": list(PREDICTION_PHASES)}


def design_spec(config: dict, name: str) -> dict:
    """The plan's spec of the design (what Design.of reads back) from the config the schema
    completed: the experiment's name, its `comparison`, `stats` and `bench`, and what the
    design holds of each variant; canonical, as every param is."""
    return canonical(
        {
            "experiment": name,
            **{section: config[section] for section in SECTIONS},
            "variants": {n: design_of_variant(v) for n, v in config["variants"].items()},
        }
    )
