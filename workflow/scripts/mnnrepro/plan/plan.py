"""One experiment's plan, built once from its resolved config (live or replayed): the names of
its engines, models, devices and variants with their kinds and keys, the sweep's points, the
judged pairs, and every path a rule reads or writes. `common.smk` builds it and the rules ask
it (its methods taking `wildcards` are Snakemake input functions); it is tested without
Snakemake parsing a workflow."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import ClassVar

from snakemake.io import ancient, expand

from mnnrepro.config import (
    canonical,
    find_images,
    prompt_image_files,
    run_variants,
    vision_image_files,
)
from mnnrepro.design import Design, variants_of
from mnnrepro.devices.kinds import device_kind
from mnnrepro.engines.pairs import Pair
from mnnrepro.engines.registry import (
    GATE_TOOL_SOURCES,
    KINDS,
    RUNNER,
    RUNNER_MODULES,
    kind_of_spec,
)
from mnnrepro.files import where_run
from mnnrepro.models.formats import FORMATS
from mnnrepro.plan.code import code_of, tool_digests
from mnnrepro.plan.engine_inputs import EngineInputs
from mnnrepro.plan.experiment import Experiment, resolve
from mnnrepro.plan.messages import JobMessages
from mnnrepro.plan.model_inputs import ModelInputs
from mnnrepro.plan.prediction import prediction_inputs
from mnnrepro.plan.settings import Settings, design_spec
from mnnrepro.plan.sources import SourceTrees
from mnnrepro.sweep_plan import sweep_points, thread_nums
from mnnrepro.toolchain.tools import GATE_COMMON, PROBE_SOURCE

# the layout file of each model format: MNN's (describe_model_layout), GGUF's (its conversion)


class Plan(EngineInputs, ModelInputs):
    """What one invocation plans; `config` is the resolved config (defaults filled)."""

    def __init__(self, config: dict, experiment: Experiment, scripts: Path):
        self.config = config
        self.settings = Settings.of(config)  # what the rules hand their jobs
        self.experiment = experiment
        self.scripts = scripts
        # the device-side runner holds the timing loop (with the module it imports for ONNX
        # Runtime GenAI): an input of every run
        self.engine_runner = [where_run(p) for p in (RUNNER, *RUNNER_MODULES.values())]
        # the gate tools' and the bandwidth probe's sources: an edit rebuilds them, not MNN
        self.gate_tool_code, self.probe_code = tool_digests(
            GATE_TOOL_SOURCES, GATE_COMMON, PROBE_SOURCE
        )
        self.models = sorted(config["models"])
        self.devices = sorted(config["devices"])
        self.device_kinds = {n: device_kind(n, s) for n, s in config["devices"].items()}
        self.variants = sorted(config["variants"])
        # what the stages below the plan know of the experiment, one param of every job that
        # judges (its pairs, statistics and repetitions; design.Design.of reads it back)
        self.design_spec = design_spec(config, experiment.name)
        self.design = Design.of(self.design_spec)
        self.judged_names = [pair.names for pair in Pair.judged(self.design)]
        self._plan_engines(config)
        self._plan_measurement(config)
        self._plan_models()
        # configured image -> its file (a replay re-derives from the archive: no images
        # needed): the gate's image prompts, the vision phase's image set
        root = scripts.parents[1]
        self.prompt_images = {} if self.experiment.replay else prompt_image_files(config, root)
        self.vision_images = {} if self.experiment.replay else vision_image_files(config, root)
        self.messages = JobMessages(self)  # what job messages say of pins, checks, intervals

    def _plan_engines(self, config: dict) -> None:
        self.engines = sorted(config["engines"])
        self.engine_kinds = kinds = {n: kind_of_spec(s) for n, s in config["engines"].items()}
        # the engines the variants run (an engine no variant names is neither built nor run)
        self.used_engines = used = sorted({config["variants"][v]["engine"] for v in self.variants})
        self.built_engines = [e for e in used if kinds[e].from_source]
        # the engines a gate tool is built for (every built one; ONNX Runtime's C API runner)
        self.tool_engines = [e for e in used if kinds[e].builds_gate_tool(config["engines"][e])]
        # the engines whose files are staged on a device (results/engines/<key>/bin)
        self.staged_engines = [e for e in used if kinds[e].stages_files]
        self.fetched_engines = [e for e in used if kinds[e].fetches_archives]
        # results/engines/<name>-<digest of what defines the engine>: configs that define an
        # engine differently never overwrite each other's builds
        self.engine_keys = {n: self._engine_key(n, s) for n, s in config["engines"].items()}
        self.engine_of_key = {key: name for name, key in self.engine_keys.items()}
        self.sources = SourceTrees(config, self.engine_kinds, self.built_engines)
        # what the kinds' conversions need on this host, by name (llama.cpp's quantizer, genai's
        # model builder)
        self.host_tools = {}
        for kind in KINDS:
            own = {e: config["engines"][e] for e in used if kinds[e] is kind}
            section = config.get(kind.config_section, {})
            self.host_tools.update(kind.host_tools(section, own, self.engine_keys))
        self.engine_formats = {n: k.model_format for n, k in self.engine_kinds.items()}
        self.model_formats = sorted(set(self.engine_formats.values()))

    def _plan_measurement(self, config: dict) -> None:
        variants = variants_of(config["variants"])
        self.sweep = sweep_points(self.design.bench, variants)
        self.variant_threads = sorted(set(thread_nums(variants).values()))
        self.main_bench = canonical({k: v for k, v in config["bench"].items() if k != "sweep"})
        self.attribution = config["attribution"]["enabled"]
        # the devices profiled (`attribution.devices`, absent = all)
        self.profiled_devices = (
            sorted(config["attribution"].get("devices", self.devices)) if self.attribution else []
        )
        # the experiment's charts (plots.smk draws them in one job); the sweep's and the
        # kernels' only where there is a sweep to explain, or profiles
        self.charts = [
            "runs",
            "speedup",
            "temperature",
            *(["sweep"] if self.sweep and self.experiment.explains else []),
            *(["kernels"] if self.attribution else []),
        ]

    # where each model format's files lie (a rule's output: PLAN.model_dir["gguf"])
    model_dir: ClassVar[dict[str, str]] = {name: f.folder() for name, f in FORMATS.items()}

    def code_of(self, script: str) -> str:
        """The digest of what an analysis job runs of this workflow's code (plan/code.py): its
        `code` param, so an edit reruns the jobs it reaches. Measurements take none: they rerun
        only when what they measure changes."""
        return code_of(self.scripts / script, self.scripts)

    @staticmethod
    def alternatives(names) -> str:
        """A wildcard constraint matching exactly these names ((?!) matches nothing)."""
        return "|".join(names) or "(?!)"

    def results(self, pattern: str, **lists) -> list[str]:
        """results/<experiment>/<pattern> for every combination of `lists` (Snakemake's
        expand): the experiment's own files."""
        return expand(
            f"results/{{experiment}}/{pattern}", experiment=[self.experiment.results_key], **lists
        )

    def per_device_and_model(self, pattern: str, devices: list[str] | None = None) -> list[str]:
        """results/<experiment>/<pattern with {device} and {model}> for every pair (of every
        device, or of `devices`)."""
        return self.results(
            pattern, device=self.devices if devices is None else devices, model=self.models
        )

    # ---- input functions (wildcards -> paths) -------------------------------------------

    def userland(self, wildcards) -> list[str]:
        if self.device_kinds[wildcards.device].needs_userland:
            return ["resources/emulation/userland.json"]
        return []

    def reference_greedy(self, wildcards):
        """The emulation reference device's greedy answers, which every other device is fed
        (teacher forcing across devices); none outside an emulated experiment."""
        reference = self.settings.emulation_reference
        if not reference or wildcards.device == reference:
            return []
        return f"results/{wildcards.experiment}/greedy/{reference}/{wildcards.model}.json"

    def emulation_tables(self, wildcards=None) -> list[str]:
        if not self.settings.emulation_reference:
            return []
        return self.results("emulation/{model}.csv", model=self.models)

    def profile_index(self, wildcards) -> list[str]:
        if wildcards.device not in self.profiled_devices:
            return []
        return [
            f"results/{wildcards.experiment}/profiles/{wildcards.device}/{wildcards.model}.json"
        ]

    def profile_indexes(self, wildcards=None) -> list[str]:
        return self.per_device_and_model("profiles/{device}/{model}.json", self.profiled_devices)

    def replay_check(self, wildcards=None) -> list[str]:
        """What a replay's check of its archive wrote (check_replay); none in a live run."""
        if not self.experiment.replay:
            return []
        return self.results("replay.json")

    def kernel_table(self, wildcards=None) -> list[str]:
        return self.results("kernels.csv") if self.attribution else []

    def prediction_files(self, wildcards=None) -> list[str]:
        """The phone's predicted gains (`prediction`; none without one)."""
        wanted = bool(self.settings.prediction)
        return self.results("prediction.{ext}", ext=["json", "md"]) if wanted else []

    def prediction_inputs(self, wildcards=None) -> dict:
        spec, key = self.settings.prediction, self.experiment.results_key
        # what the engines loaded says which model each is, where a layout records its shape
        # (a replay of an archive without layouts: the models' synthetic shapes, if any)
        device = spec.get("device")  # a registered prediction's was another run's
        counted = self.per_device_and_model("profiles/{device}/{model}.json", [device])
        found = {"manifests": self.model_manifests(), "layouts": self.model_layouts()}
        return prediction_inputs(spec, key, found, counted if device else [])

    def summary_tables(self, wildcards=None) -> list[str]:
        """The measured tables and the summary (`snakemake analysis_all`; no plots)."""
        return self.results(
            "{table}", table=["bench.csv", "summary.csv", "summary.json", "summary.md"]
        )

    def final_output(self, wildcards=None) -> list[str]:
        """The experiment's final outputs, live or replayed: the one list of them."""
        return [
            *self.summary_tables(),
            *self.results("plots/{chart}.{ext}", chart=self.charts, ext=["html", "png"]),
            *self.emulation_tables(),
            *self.mechanism_tables(),
            *self.kernel_table(),
            *self.prediction_files(),
            *self.engine_tests_table(),
            *self.replay_check(),
        ]

    def replay_tables(self) -> list[str]:
        """The tables check_replay compares with the archive's own (results/<experiment>/...)."""
        prefix = f"results/{self.experiment.results_key}/"
        return [p.removeprefix(prefix) for p in self.final_output() if p.endswith(".csv")]

    def mechanism_tables(self) -> list[str]:
        """What explains the gain: the ceiling analysis and the sweep's tables (their charts
        are among self.charts)."""
        if not self.experiment.explains:
            return []
        sweep = ["sweep/bench.csv", "sweep/summary.csv"] if self.sweep else []
        return self.results("{table}", table=["mechanism.csv", "mechanism.json", *sweep])

    def engine_spec(self, wildcards) -> dict:
        return canonical(self.config["engines"][self.engine_of_key[wildcards.engine]])

    def engine_name(self, wildcards) -> str:
        return self.engine_of_key[wildcards.engine]

    def device_spec(self, wildcards) -> dict:
        return canonical(self.config["devices"][wildcards.device])

    def variant_specs(self, wildcards=None) -> dict:
        return canonical(run_variants(self.config))

    def run_indexes(self, wildcards=None) -> list[str]:
        return self.per_device_and_model("runs/{device}/{model}.json")

    def greedy_files(self, wildcards=None) -> list[str]:
        return self.per_device_and_model("greedy/{device}/{model}.json")

    def validity_files(self, wildcards=None) -> list[str]:
        return self.per_device_and_model("validity/{device}/{model}.json")

    def device_facts(self, wildcards=None) -> list[str]:
        return self.results("devices/{device}.json", device=self.devices)

    def pair_mode_files(self, wildcards=None) -> list[str]:
        """Every device's pair modes (rule decide_pair_modes): derived, never archived."""
        return self.results("modes/{device}.json", device=self.devices)

    def phones_ready(self, wildcards=None) -> list:
        """What an engine build waits for: the facts of the experiment's phones, whose job
        refuses a phone not ready (locked, low battery, full, unauthorized) before any build
        starts; ancient, so facts collected again never rebuild an engine. None on a replay."""
        checked = [d for d in self.devices if self.device_kinds[d].checked_before_builds]
        if self.experiment.replay:
            return []
        return [ancient(f) for f in self.results("devices/{device}.json", device=checked)]

    def archived_records(self) -> dict[str, list[str]]:
        """The records an archive carries beside the final outputs, by kind: what
        archive_results packs and restore_archive writes back (a replay), declared once.
        Everything else of a replay is derived again from them by the analysis rules."""
        return {
            "runs": self.run_indexes(),
            "validity": self.validity_files(),
            "greedy": self.greedy_files(),
            "facts": self.device_facts(),
            "engines": self.engine_files(),
            "manifests": self.model_manifests(),
            "layouts": self.model_layouts(),
            "bandwidth": self.bandwidth_files(),
            "sweep": self.sweep_indexes(),
            "profiles": self.profile_indexes(),
            "engine_tests": self.engine_test_files(),
        }

    def bandwidth(self, wildcards) -> list[str]:
        """The device's bandwidth record, measured before its benchmark (if asked for)."""
        if not self.experiment.measures_bandwidth:
            return []
        return [f"results/{wildcards.experiment}/bandwidth/{wildcards.device}.json"]

    def bandwidth_files(self, wildcards=None) -> list[str]:
        wanted = self.experiment.measures_bandwidth
        return self.results("bandwidth/{device}.json", device=self.devices) if wanted else []

    def point_bench(self, wildcards) -> dict:
        # the whole `bench`: a point runs `bench.sweep.repetitions` (SweepPoint.bench)
        return canonical(self.sweep[wildcards.point].bench(self.config["bench"]))

    def point_variants(self, wildcards) -> dict:
        return canonical(self.sweep[wildcards.point].variants(run_variants(self.config)))

    def sweep_indexes(self, wildcards=None) -> list[str]:
        """Every sweep point on every real device (emulated timings are never compared)."""
        return self.results(
            "sweep/runs/{device}/{model}/{point}.json",
            device=[d for d in self.devices if not self.device_kinds[d].emulated],
            model=self.models,
            point=sorted(self.sweep),
        )

    def store_archives(self, wildcards=None) -> list[str]:
        """`snakemake store`: this experiment's archive, then `store.archives` (found as the
        config's images are: the working directory, then the workflow's)."""
        others = self.config.get("store", {}).get("archives", [])
        named = [(f"store.archives.{i}", a) for i, a in enumerate(others)]
        found = find_images(named, self.scripts.parents[1])
        own = f"results/{self.experiment.results_key}/{self.experiment.name}-archive.tar.gz"
        return [own, *(found[a] for a in others)]

    def mechanism_report(self, wildcards) -> list[str]:
        return self.results("mechanism.json") if self.experiment.explains else []

    def sweep_report(self, wildcards) -> list[str]:
        if not (self.sweep and self.experiment.explains):
            return []
        return [
            f"results/{wildcards.experiment}/sweep/{f}" for f in ("summary.csv", "summary.json")
        ]


def plan_of(config: dict, config_path: str | Path, root: Path) -> Plan:
    """A config file's plan as common.smk builds it, for tools and tests outside Snakemake
    (a copy of the config resolved; root: the repository)."""
    config = copy.deepcopy(config)
    experiment = resolve(config, [str(config_path)], default_config=root / "config" / "config.yaml")
    return Plan(config, experiment, root / "workflow" / "scripts")
