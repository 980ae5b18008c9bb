# Validate the config, expose its names, constrain wildcards, and the input/param helpers.
import os
import sys
from pathlib import Path

from snakemake.utils import validate

SCRIPTS = Path(workflow.basedir) / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))
# Rule scripts import this workflow's own copy of the package, even where another checkout of
# it is installed (pip install -e): PYTHONPATH comes before site-packages in every job.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(SCRIPTS), *filter(None, [os.environ.get("PYTHONPATH")])]
)

from mnnrepro.hashing import code_digest  # noqa: E402
from mnnrepro.engine import engine_key, source_key  # noqa: E402
from mnnrepro.config import (  # noqa: E402
    ConfigError,
    check as check_config,
    prompt_images,
    run_variants,
)

try:
    check_config(config)  # clear errors that name the key, before any job runs
except ConfigError as err:
    raise WorkflowError(str(err)) from None
validate(config, "../schemas/config.schema.yaml")  # fills the schema's defaults

EXPERIMENT = config["experiment"]
REPLAY = config.get("replay", "")  # an archive to re-derive results from (no device needed)
# The prebuilt engine's device-side runner holds the timing loop: an input of every device run.
ENGINE_RUNNER = str(Path(workflow.basedir) / "workflow/scripts/mnnrepro/prebuilt_runner.py")
# Analysis rules rerun when the package's code changes (Snakemake tracks only the script
# files themselves); measurements do not: they rerun when what they measure changes.
ANALYSIS_CODE = code_digest(Path(workflow.basedir) / "workflow" / "scripts" / "mnnrepro")
try:  # configured image -> its file (a replay re-derives from the archive: no images needed)
    PROMPT_IMAGES = {} if REPLAY else prompt_images(config, workflow.basedir)
except ConfigError as err:
    raise WorkflowError(str(err)) from None
ENGINES = sorted(config["engines"])
MODELS = sorted(config["models"])
DEVICES = sorted(config["devices"])
VARIANTS = sorted(config["variants"])
BUILT_ENGINES = sorted(
    {config["variants"][v]["engine"] for v in VARIANTS}
    & {e for e, spec in config["engines"].items() if "build" in spec}
)
# Engine outputs live under results/engines/<name>-<digest of what defines the engine>, so
# configs that define an engine differently never overwrite each other's builds.
ENGINE_KEYS = {name: engine_key(name, spec, config) for name, spec in config["engines"].items()}
ENGINE_OF_KEY = {key: name for name, key in ENGINE_KEYS.items()}
MNN_SOURCE_RECEIPT = f"resources/mnn/{source_key(config)}/source.json"
# The correctness gate's token-id tool, built per engine: its sources are a parameter of
# its rule, so an edit rebuilds the tool (not MNN).
GATE_TOOL_CODE = code_digest(
    Path(workflow.basedir) / "workflow/scripts/mnnrepro/greedy_tool", ("*.cpp", "*.txt")
)


def _alternatives(names):
    return "|".join(names) or "(?!)"  # (?!) matches nothing: no model of that source


def models_from(source):
    return [m for m in MODELS if source in config["models"][m]]


SYNTHETIC_MODELS = models_from("synthetic")
DOWNLOADED_MODELS = models_from("modelscope")
EXPORTED_MODELS = models_from("export")


# Rules that touch a device, or are too small to queue, run where Snakemake runs (cluster profile).
localrules:
    all,
    archive,
    describe_engine,
    collect_device_facts,
    push_to_device,
    run_greedy,
    run_bench,
    check_validity,
    collect_bench_table,
    compute_summary,
    plot_runs,
    plot_speedup,
    plot_temperature,
    write_summary_report,
    archive_results,
    replay_archive,
    check_emulation,


wildcard_constraints:
    experiment=EXPERIMENT,
    engine=_alternatives(sorted(ENGINE_OF_KEY)),
    model=_alternatives(MODELS),
    device=_alternatives(DEVICES),
    replay="[^/]+",


def replay_name(archive):
    return Path(archive).name.removesuffix(".tar.gz")


def get_userland(wildcards):
    if "qemu" in config["devices"][wildcards.device]:
        return ["resources/emulation/userland.json"]
    return []


def get_emulation_tables(wildcards):
    if not config.get("emulation", {}).get("reference"):
        return []
    return expand("results/{experiment}/emulation/{model}.csv", experiment=EXPERIMENT, model=MODELS)


def get_final_output(wildcards):
    if REPLAY:
        return expand(
            "results/replay/{replay}/{table}",
            replay=replay_name(REPLAY),
            table=["bench.csv", "summary.csv", "summary.json", "summary.md"],
        )
    return [
        *expand(
            "results/{experiment}/{table}",
            experiment=EXPERIMENT,
            table=["bench.csv", "summary.csv", "summary.json", "summary.md"],
        ),
        *expand(
            "results/{experiment}/plots/{chart}.{ext}",
            experiment=EXPERIMENT,
            chart=["runs", "speedup", "temperature"],
            ext=["html", "png"],
        ),
        *get_emulation_tables(wildcards),
    ]


def get_model_spec(wildcards):
    return config["models"][wildcards.model]


def get_checkpoint(wildcards):
    """The transformers checkpoint llmexport converts: synthetic, downloaded, or local."""
    spec = config["models"][wildcards.model]
    if "synthetic" in spec:
        return f"results/models/{wildcards.model}/hf"
    source = spec["export"]["from"]
    if "modelscope" in source:
        return f"resources/checkpoints/{wildcards.model}"
    return source["path"]


def get_engine_spec(wildcards):
    return config["engines"][ENGINE_OF_KEY[wildcards.engine]]


def engine_name(wildcards):
    return ENGINE_OF_KEY[wildcards.engine]


def get_device_spec(wildcards):
    return config["devices"][wildcards.device]


def get_variant_specs(wildcards):
    return run_variants(config)


def engine_record(engine):
    # A built engine is described by its build.json, a prebuilt one by engine.json.
    kind = "build" if "build" in config["engines"][engine] else "engine"
    return f"results/engines/{ENGINE_KEYS[engine]}/{kind}.json"


def get_engine_files(wildcards):
    return sorted({engine_record(config["variants"][v]["engine"]) for v in VARIANTS})


def get_built_engine_dirs(wildcards):
    return [f"results/engines/{ENGINE_KEYS[e]}/bin" for e in BUILT_ENGINES]


def get_gate_tool_dirs(wildcards):
    return [f"results/engines/{ENGINE_KEYS[e]}/gate-tool" for e in BUILT_ENGINES]


def get_gate_tool_records(wildcards):
    return [f"results/engines/{ENGINE_KEYS[e]}/gate-tool.json" for e in BUILT_ENGINES]


def get_build_spec(wildcards):
    return get_engine_spec(wildcards)["build"]


def get_ndk_receipt(wildcards):
    if get_build_spec(wildcards)["platform"] != "android-arm64":
        return []
    return [f"resources/ndk/{config['toolchains']['ndk']['version']}.json"]


def get_run_indexes(wildcards):
    return expand(
        "results/{experiment}/runs/{device}/{model}.json",
        experiment=EXPERIMENT,
        device=DEVICES,
        model=MODELS,
    )


def get_replay_archive(wildcards):
    if not REPLAY:
        raise WorkflowError("replay outputs need an archive: --config replay=<archive.tar.gz>")
    return REPLAY


def get_greedy_files(wildcards):
    return expand(
        "results/{experiment}/greedy/{device}/{model}.json",
        experiment=EXPERIMENT,
        device=DEVICES,
        model=MODELS,
    )


def get_validity_files(wildcards):
    return expand(
        "results/{experiment}/validity/{device}/{model}.json",
        experiment=EXPERIMENT,
        device=DEVICES,
        model=MODELS,
    )


def get_bench_threads(wildcards):
    # A local device is this machine: the benchmark takes every core so nothing else runs.
    return workflow.cores if "local" in config["devices"][wildcards.device] else 1
