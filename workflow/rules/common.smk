# Validate the config, expose its names, constrain wildcards, and the input/param helpers.
import re
import sys
from pathlib import Path

# This workflow's own files, found from this file (not workflow.basedir, which is the
# including workflow's when this one is used as a Snakemake `module`).
WORKFLOW_ROOT = Path(workflow.current_basedir).resolve().parents[1]
SCRIPTS = WORKFLOW_ROOT / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))

from mnnrepro.files import code_digest# noqa: E402
from mnnrepro.build.records import engine_key, source_key  # noqa: E402
from mnnrepro.devices.kinds import device_kind  # noqa: E402
from mnnrepro.engines.registry import kind_of_spec  # noqa: E402
from mnnrepro.plan.experiment import resolve as resolve_experiment  # noqa: E402
from mnnrepro.config import (  # noqa: E402
    ConfigError,
    canonical,
    use_this_package,
    judged_pairs,
    prompt_images,
    run_variants,
)
from mnnrepro.sweep_plan import (  # noqa: E402
    point_bench,
    point_variants,
    sweep_points,
    thread_nums,
)

use_this_package(SCRIPTS)  # jobs import this workflow's package, whatever is installed
try:  # the config given (or the default, or a replayed archive's), checked and completed
    THE_EXPERIMENT = resolve_experiment(
        config,
        workflow.configfiles,
        default_config=WORKFLOW_ROOT / "config" / "config.yaml",
        schema=WORKFLOW_ROOT / "workflow" / "schemas" / "config.schema.yaml",
    )
    # configured image -> its file (a replay re-derives from the archive: no images needed)
    PROMPT_IMAGES = {} if THE_EXPERIMENT.replay else prompt_images(config, WORKFLOW_ROOT)
except ConfigError as err:  # names the key, file or archive, before any job runs
    raise WorkflowError(str(err)) from None
REPLAY = THE_EXPERIMENT.replay  # an archive to re-derive results from (no device needed)
EXPERIMENT = THE_EXPERIMENT.name
# Where this experiment's files are: results/<experiment>/, or for a replay
# results/replay/<archive name>/ (records restored from the archive, the rest derived by the
# same rules as a live run). The {experiment} wildcard of every rule path is this key.
RESULTS_KEY = THE_EXPERIMENT.results_key
ENGINES_DIR = THE_EXPERIMENT.engines_dir
MODELS_DIR = THE_EXPERIMENT.models_dir
MEASURES_BANDWIDTH = THE_EXPERIMENT.measures_bandwidth
EXPLAINS = THE_EXPERIMENT.explains
# The prebuilt engine's device-side runner holds the timing loop: an input of every device run.
ENGINE_RUNNER = str(SCRIPTS / "mnnrepro/runs/prebuilt_runner.py")
# Analysis rules rerun when the package's code changes (Snakemake tracks only the script
# files themselves); measurements do not: they rerun when what they measure changes.
ANALYSIS_CODE = code_digest(SCRIPTS / "mnnrepro")
ENGINES = sorted(config["engines"])
MODELS = sorted(config["models"])
DEVICES = sorted(config["devices"])
DEVICE_KINDS = {name: device_kind(name, spec) for name, spec in config["devices"].items()}
VARIANTS = sorted(config["variants"])
BUILT_ENGINES = sorted(
    {config["variants"][v]["engine"] for v in VARIANTS}
    & {e for e, spec in config["engines"].items() if kind_of_spec(spec).from_source}
)


# Engine outputs live under results/engines/<name>-<digest of what defines the engine>, so
# configs that define an engine differently never overwrite each other's builds.
def _engine_key(name, spec):
    kind = kind_of_spec(spec)
    section = kind.config_key if kind.from_source else None
    return engine_key(name, spec, config, section, kind.source_section)


ENGINE_KEYS = {name: _engine_key(name, spec) for name, spec in config["engines"].items()}
ENGINE_OF_KEY = {key: name for name, key in ENGINE_KEYS.items()}
# the source trees of the from-source kinds: `mnn` and `llamacpp` (resources/<section>/<key>/)
SOURCE_RECEIPTS = {
    section: f"resources/{section}/{source_key(config, section)}/source.json"
    for section in ("mnn", "llamacpp")
}
MNN_SOURCE_RECEIPT = SOURCE_RECEIPTS["mnn"]
LLAMACPP_SOURCE_RECEIPT = SOURCE_RECEIPTS["llamacpp"]
# llama-quantize for this host: the GGUF is quantized here, whatever device runs it
QUANTIZER_DIR = f"results/tools/llama-quantize-{source_key(config, 'llamacpp')}"
# The correctness gate's token-id tool, built per engine: its sources are a parameter of
# its rule, so an edit rebuilds the tool (not MNN).
GATE_TOOL_CODE = "".join(
    code_digest(SCRIPTS / "mnnrepro/build" / tool, ("*.cpp", "*.hpp", "*.txt"))
    for tool in ("greedy_tool", "llama_gate_tool", "gate_common")
)


# The bandwidth probe's sources, a parameter of its rule: an edit rebuilds the probe.
PROBE_CODE = code_digest(SCRIPTS / "mnnrepro/build/bandwidth_probe", ("*.c", "*.txt"))
# `bench.sweep`: point label -> its settings (results/<experiment>/sweep/, one job per point)
SWEEP = sweep_points(config)
# Every thread count a variant runs with: the bandwidth probe runs at each (and on every core).
VARIANT_THREADS = sorted(set(thread_nums(config["variants"]).values()))
# What a benchmark measures at the main point (the sweep's lists are not part of it).
MAIN_BENCH = canonical({k: v for k, v in config["bench"].items() if k != "sweep"})


def _alternatives(names):
    return "|".join(names) or "(?!)"  # (?!) matches nothing: no model of that source


def models_from(source):
    return [m for m in MODELS if source in config["models"][m]]


SYNTHETIC_MODELS = models_from("synthetic")
DOWNLOADED_MODELS = models_from("modelscope")
EXPORTED_MODELS = models_from("export")
# models whose original weights are downloaded from ModelScope: to export, or (beside an MNN
# download) for the engines that convert it themselves
CHECKPOINT_MODELS = sorted(set(EXPORTED_MODELS) | set(models_from("checkpoint")))
CONVERTIBLE_MODELS = sorted(set(SYNTHETIC_MODELS) | set(CHECKPOINT_MODELS))


# Rules that touch a device (the phones hang off the host Snakemake runs on), download (compute
# nodes often have no network) or only name targets say `localrule: True`: they run where
# Snakemake runs. Builds, exports and analysis go to the cluster (profiles/slurm).


wildcard_constraints:
    experiment=re.escape(RESULTS_KEY),
    engine=_alternatives(sorted(ENGINE_OF_KEY)),
    model=_alternatives(MODELS),
    device=_alternatives(DEVICES),
    point=_alternatives([re.escape(p) for p in SWEEP]),


def get_userland(wildcards):
    if DEVICE_KINDS[wildcards.device].needs_userland:
        return ["resources/emulation/userland.json"]
    return []


def get_reference_greedy(wildcards):
    """The emulation reference device's greedy answers, which every other device is fed
    (teacher forcing across devices); none outside an emulated experiment."""
    reference = config.get("emulation", {}).get("reference", "")
    if not reference or wildcards.device == reference:
        return []
    return f"results/{wildcards.experiment}/greedy/{reference}/{wildcards.model}.json"


def get_emulation_tables(wildcards):
    if not config.get("emulation", {}).get("reference"):
        return []
    return expand(
        "results/{experiment}/emulation/{model}.csv", experiment=RESULTS_KEY, model=MODELS
    )


# `attribution.enabled`: one profiled invocation per variant and phase (runs/profile.py);
# archived and replayed like the runs.
ATTRIBUTION = config["attribution"]["enabled"]


def get_profile_index(wildcards):
    if not ATTRIBUTION:
        return []
    return [f"results/{wildcards.experiment}/profiles/{wildcards.device}/{wildcards.model}.json"]


def get_profile_indexes(wildcards):
    if not ATTRIBUTION:
        return []
    return expand(
        "results/{experiment}/profiles/{device}/{model}.json",
        experiment=RESULTS_KEY,
        device=DEVICES,
        model=MODELS,
    )


def get_kernel_table(wildcards):
    return [f"results/{RESULTS_KEY}/kernels.csv"] if ATTRIBUTION else []


def get_kernel_outputs(wildcards):
    """What ran: the kernel table and its chart."""
    if not ATTRIBUTION:
        return []
    return [
        *get_kernel_table(wildcards),
        *expand(f"results/{RESULTS_KEY}/plots/kernels.{{ext}}", ext=["html", "png"]),
    ]


def get_final_output(wildcards):
    """The experiment's final outputs, live or replayed: the one list of them."""
    return [
        *expand(
            "results/{experiment}/{table}",
            experiment=RESULTS_KEY,
            table=["bench.csv", "summary.csv", "summary.json", "summary.md"],
        ),
        *expand(
            "results/{experiment}/plots/{chart}.{ext}",
            experiment=RESULTS_KEY,
            chart=["runs", "speedup", "temperature"],
            ext=["html", "png"],
        ),
        *get_emulation_tables(wildcards),
        *get_mechanism_outputs(wildcards),
        *get_kernel_outputs(wildcards),
    ]


def get_mechanism_outputs(wildcards):
    """What explains the gain: the ceiling analysis, the sweep and their plots."""
    if not EXPLAINS:
        return []
    sweep = ["sweep/bench.csv", "sweep/summary.csv"] if SWEEP else []
    charts = ["sweep"] if SWEEP else []
    return [
        *expand(
            "results/{experiment}/{table}",
            experiment=RESULTS_KEY,
            table=["mechanism.csv", "mechanism.json", *sweep],
        ),
        *expand(
            "results/{experiment}/plots/{chart}.{ext}",
            experiment=RESULTS_KEY,
            chart=charts,
            ext=["html", "png"],
        ),
    ]


def get_model_spec(wildcards):
    return canonical(config["models"][wildcards.model])


def get_checkpoint(wildcards):
    """The transformers checkpoint llmexport converts: synthetic, downloaded, or local."""
    spec = config["models"][wildcards.model]
    if "synthetic" in spec:
        return f"results/models/{wildcards.model}/hf"
    source = spec["export"]["from"] if "export" in spec else spec["checkpoint"]
    if "modelscope" in source:
        return f"resources/checkpoints/{wildcards.model}"
    return source["path"]


def get_engine_spec(wildcards):
    return canonical(config["engines"][ENGINE_OF_KEY[wildcards.engine]])


def engine_name(wildcards):
    return ENGINE_OF_KEY[wildcards.engine]


def get_device_spec(wildcards):
    return canonical(config["devices"][wildcards.device])


def get_variant_specs(wildcards):
    return canonical(run_variants(config))


# The model in every format the engines read (a property of their kind: MNN's export for both
# MNN kinds, GGUF for llama.cpp), each in results/models/<model>/<format>/.
# engine -> the model format it reads (the decode ceiling takes that format's layout too)
ENGINE_FORMATS = {name: kind_of_spec(spec).model_format for name, spec in config["engines"].items()}
MODEL_FORMATS = sorted(set(ENGINE_FORMATS.values()))
MNN_MODEL_DIR = "results/models/{model}/mnn"
GGUF_MODEL_DIR = "results/models/{model}/gguf"


def get_model_dirs(wildcards):
    return [f"results/models/{wildcards.model}/{fmt}" for fmt in MODEL_FORMATS]


# the pairs whose CIs precision on demand watches: the compared ones and the A/A control
JUDGED_PAIRS = judged_pairs(config)


def engine_record(engine):
    # what its rules write: a built engine's build.json, a prebuilt one's engine.json
    name = kind_of_spec(config["engines"][engine]).record_name
    return f"{ENGINES_DIR}/{ENGINE_KEYS[engine]}/{name}"


def get_engine_files(wildcards):
    return sorted({engine_record(config["variants"][v]["engine"]) for v in VARIANTS})


def get_built_engine_dirs(wildcards):
    return [f"results/engines/{ENGINE_KEYS[e]}/bin" for e in BUILT_ENGINES]


def get_gate_tool_dirs(wildcards):
    return [f"results/engines/{ENGINE_KEYS[e]}/gate-tool" for e in BUILT_ENGINES]


def get_gate_tool_records(wildcards):
    return [f"results/engines/{ENGINE_KEYS[e]}/gate-tool.json" for e in BUILT_ENGINES]


def get_build_spec(wildcards):
    """What the engine's kind builds from (`engines.<name>.build` or `.llamacpp`)."""
    spec = config["engines"][ENGINE_OF_KEY[wildcards.engine]]
    return canonical(spec[kind_of_spec(spec).config_key])


def get_source_receipt(wildcards):
    """The source tree an engine is built from: its kind's (MNN's, or llama.cpp's)."""
    kind = kind_of_spec(config["engines"][ENGINE_OF_KEY[wildcards.engine]])
    return SOURCE_RECEIPTS[kind.source_section]


def get_ndk_receipt(wildcards):
    if get_build_spec(wildcards)["platform"] != "android-arm64":
        return []
    return [f"resources/ndk/{config['toolchains']['ndk']['version']}.json"]


# a replay's run indexes name the archived raw paths; the files are restored here
RAW_ROOTS = THE_EXPERIMENT.raw_roots


def get_run_indexes(wildcards):
    return expand(
        "results/{experiment}/runs/{device}/{model}.json",
        experiment=RESULTS_KEY,
        device=DEVICES,
        model=MODELS,
    )


def get_model_manifests(wildcards):
    return expand("{root}/{model}/manifest.json", root=MODELS_DIR, model=MODELS)


def get_greedy_files(wildcards):
    return expand(
        "results/{experiment}/greedy/{device}/{model}.json",
        experiment=RESULTS_KEY,
        device=DEVICES,
        model=MODELS,
    )


def get_validity_files(wildcards):
    return expand(
        "results/{experiment}/validity/{device}/{model}.json",
        experiment=RESULTS_KEY,
        device=DEVICES,
        model=MODELS,
    )


def all_cores():
    """--cores N, or 1 where no job runs and none is given (--report, --lint, -n):
    Snakemake's workflow.cores raises there."""
    try:
        return max(1, workflow.cores)
    except WorkflowError:
        return 1


def get_bench_threads(wildcards):
    # A local device is this machine: the benchmark takes every core so nothing else runs.
    return all_cores() if DEVICE_KINDS[wildcards.device].is_this_host else 1


def probed_engines(wildcards):
    """Engines whose bandwidth probe runs on this device (none on an emulated one: its memory
    is the host's, seen through QEMU)."""
    if not MEASURES_BANDWIDTH or DEVICE_KINDS[wildcards.device].emulated:
        return []
    return sorted({config["variants"][v]["engine"] for v in VARIANTS})


def get_probe_records(wildcards):
    return [
        f"results/engines/{ENGINE_KEYS[e]}/bandwidth-probe.json" for e in probed_engines(wildcards)
    ]


def get_probe_dirs(wildcards):
    return [f"results/engines/{ENGINE_KEYS[e]}/bandwidth-probe" for e in probed_engines(wildcards)]


def get_bandwidth(wildcards):
    """The device's bandwidth record, measured before its benchmark (if asked for)."""
    if not MEASURES_BANDWIDTH:
        return []
    return [f"results/{wildcards.experiment}/bandwidth/{wildcards.device}.json"]


# the layout file of each model format: MNN's (describe_model_layout), GGUF's (its conversion)
LAYOUT_FILES = {"mnn": "layout.json", "gguf": "layout-gguf.json"}


def get_model_layouts(wildcards):
    if not EXPLAINS:
        return []
    names = [LAYOUT_FILES[fmt] for fmt in MODEL_FORMATS]
    return expand("{root}/{model}/{name}", root=MODELS_DIR, model=MODELS, name=names)


def get_bandwidth_files(wildcards):
    if not MEASURES_BANDWIDTH:
        return []
    return expand(
        "results/{experiment}/bandwidth/{device}.json", experiment=RESULTS_KEY, device=DEVICES
    )


def get_point_bench(wildcards):
    return canonical(point_bench(MAIN_BENCH, SWEEP[wildcards.point]))


def get_point_variants(wildcards):
    return canonical(point_variants(run_variants(config), SWEEP[wildcards.point]))


def get_sweep_indexes(wildcards):
    """Every sweep point on every real device (emulated timings are never compared)."""
    return expand(
        "results/{experiment}/sweep/runs/{device}/{model}/{point}.json",
        experiment=RESULTS_KEY,
        device=[d for d in DEVICES if not DEVICE_KINDS[d].emulated],
        model=MODELS,
        point=sorted(SWEEP),
    )


def get_mechanism_report(wildcards):
    return [f"results/{wildcards.experiment}/mechanism.json"] if EXPLAINS else []


def get_sweep_report(wildcards):
    if not (SWEEP and EXPLAINS):
        return []
    return [f"results/{wildcards.experiment}/sweep/{f}" for f in ("summary.csv", "summary.json")]
