# The glue: resolve the experiment, build its plan (mnnrepro/plan/plan.py: every name, kind,
# key and path the rules use, tested without Snakemake), constrain the wildcards, and give
# the rules the plan's names.
import re
import sys
from pathlib import Path

# This workflow's own files, found from this file (not workflow.basedir, which is the
# including workflow's when this one is used as a Snakemake `module`).
WORKFLOW_ROOT = Path(workflow.current_basedir).resolve().parents[1]
SCRIPTS = WORKFLOW_ROOT / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))

from mnnrepro.config import (  # noqa: E402
    ConfigError,
    canonical,
    prompt_images,
    use_this_package,
    vision_images,
)
from mnnrepro.plan.experiment import resolve as resolve_experiment  # noqa: E402
from mnnrepro.plan.messages import JobMessages  # noqa: E402
from mnnrepro.plan.overview import overview  # noqa: E402
from mnnrepro.plan.plan import (  # noqa: E402
    GGUF_MODEL_DIR,
    LAYOUT_FILES,
    MNN_MODEL_DIR,
    Plan,
)

use_this_package(SCRIPTS)  # jobs import this workflow's package, whatever is installed
try:  # the config given (or the default, or a replayed archive's), checked and completed
    THE_EXPERIMENT = resolve_experiment(
        config,
        workflow.configfiles,
        default_config=WORKFLOW_ROOT / "config" / "config.yaml",
    )
    # configured image -> its file (a replay re-derives from the archive: no images needed):
    # the gate's image prompts, the vision phase's image set
    PROMPT_IMAGES = {} if THE_EXPERIMENT.replay else prompt_images(config, WORKFLOW_ROOT)
    VISION_IMAGES = {} if THE_EXPERIMENT.replay else vision_images(config, WORKFLOW_ROOT)
except ConfigError as err:  # names the key, file or archive, before any job runs
    # SystemExit, not WorkflowError: Snakemake prints a WorkflowError with this file's name,
    # line and frame around it; an exit prints the one line (after Snakemake's own profile
    # line, which comes before the Snakefile is read)
    raise SystemExit(f"error: {err}") from None
PLAN = Plan(config, THE_EXPERIMENT, SCRIPTS)
MESSAGES = JobMessages(PLAN)  # what the job messages say of pins, checks and intervals
if workflow.is_main_process:  # before the job list: what this will do, and for how long
    print("\n".join(overview(PLAN)), file=sys.stderr)

# The plan's names, as the rule files read them.
REPLAY, EXPERIMENT, RESULTS_KEY = PLAN.replay, PLAN.name, PLAN.results_key
ENGINES_DIR, MODELS_DIR, RAW_ROOTS = PLAN.engines_dir, PLAN.models_dir, PLAN.raw_roots
MEASURES_BANDWIDTH, EXPLAINS, ATTRIBUTION = (
    PLAN.measures_bandwidth,
    PLAN.explains,
    PLAN.attribution,
)
ENGINE_RUNNER, ANALYSIS_CODE = PLAN.engine_runner, PLAN.analysis_code
GATE_TOOL_CODE, PROBE_CODE = PLAN.gate_tool_code, PLAN.probe_code
ENGINES, MODELS, DEVICES, VARIANTS = PLAN.engines, PLAN.models, PLAN.devices, PLAN.variants
DEVICE_KINDS, BUILT_ENGINES = PLAN.device_kinds, PLAN.built_engines
ENGINE_KEYS, ENGINE_OF_KEY = PLAN.engine_keys, PLAN.engine_of_key
SOURCE_TREES, QUANTIZER_DIR = PLAN.source_trees, PLAN.quantizer_dir
LLAMACPP_SOURCE_RECEIPT = PLAN.sources.section_receipts["llamacpp"]  # its converter and quantizer's
SWEEP, VARIANT_THREADS, MAIN_BENCH = PLAN.sweep, PLAN.variant_threads, PLAN.main_bench
ENGINE_FORMATS, MODEL_FORMATS = PLAN.engine_formats, PLAN.model_formats
JUDGED_PAIRS, CHARTS = PLAN.judged_pairs, PLAN.charts
REPLAY_TABLES = PLAN.replay_tables() if REPLAY else []
ARCHIVED_RECORDS = PLAN.archived_records()  # what an archive packs and a replay restores
SYNTHETIC_MODELS, DOWNLOADED_MODELS = PLAN.synthetic_models, PLAN.downloaded_models
EXPORTED_MODELS, CHECKPOINT_MODELS = PLAN.exported_models, PLAN.checkpoint_models
CONVERTIBLE_MODELS = PLAN.convertible_models
models_from, engine_record, probed_engines = (
    PLAN.models_from,
    PLAN.engine_record,
    PLAN.probed_engines,
)


def _alternatives(names):
    return "|".join(names) or "(?!)"  # (?!) matches nothing: no model of that source


# Rules that touch a device (the phones hang off the host Snakemake runs on), download (compute
# nodes often have no network) or only name targets say `localrule: True`: they run where
# Snakemake runs. Builds, exports and analysis go to the cluster (profiles/slurm).


wildcard_constraints:
    experiment=re.escape(RESULTS_KEY),
    engine=_alternatives(sorted(ENGINE_OF_KEY)),
    model=_alternatives(MODELS),
    device=_alternatives(DEVICES),
    point=_alternatives([re.escape(p) for p in SWEEP]),


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


# The plan's input functions (wildcards -> paths or params), as the rule files name them.
get_userland, get_reference_greedy = PLAN.userland, PLAN.reference_greedy
get_emulation_tables, get_final_output = PLAN.emulation_tables, PLAN.final_output
get_profile_index, get_profile_indexes = PLAN.profile_index, PLAN.profile_indexes
get_kernel_table, get_model_spec = PLAN.kernel_table, PLAN.model_spec
get_checkpoint, get_checkpoint_dirs = PLAN.checkpoint, PLAN.checkpoint_dirs
get_engine_spec, engine_name = PLAN.engine_spec, PLAN.engine_name
get_device_spec, get_variant_specs = PLAN.device_spec, PLAN.variant_specs
get_device_facts = PLAN.device_facts
get_model_dirs, get_engine_files = PLAN.model_dirs, PLAN.engine_files
get_keyed_engine_record = PLAN.keyed_engine_record
get_built_engine_dirs, get_gate_tool_dirs = PLAN.built_engine_dirs, PLAN.gate_tool_dirs
get_gate_tool_records, get_build_spec = PLAN.gate_tool_records, PLAN.build_spec
get_source_receipt, get_ndk_receipt = PLAN.source_receipt, PLAN.ndk_receipt
get_source_tree, get_source_patches = PLAN.source_tree, PLAN.source_patches
get_run_indexes, get_model_manifests = PLAN.run_indexes, PLAN.model_manifests
get_greedy_files, get_validity_files = PLAN.greedy_files, PLAN.validity_files
get_probe_records, get_probe_dirs = PLAN.probe_records, PLAN.probe_dirs
get_bandwidth, get_model_layouts = PLAN.bandwidth, PLAN.model_layouts
get_bandwidth_files, get_point_bench = PLAN.bandwidth_files, PLAN.point_bench
get_point_variants, get_sweep_indexes = PLAN.point_variants, PLAN.sweep_indexes
get_mechanism_report, get_sweep_report = PLAN.mechanism_report, PLAN.sweep_report
