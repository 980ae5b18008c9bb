"""Config validation: the shipped configs pass; bad ones fail naming the key."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from conftest import full_variants, run_snakemake
from snakemake.utils import update_config

from mnnrepro.config import ConfigError, check_schema
from mnnrepro.engines.registry import EngineRecord, kind_of_spec
from mnnrepro.plan.checks import check
from mnnrepro.plan.overview import downloads
from mnnrepro.plan.plan import plan_of

CONFIGS = [
    "config/config.yaml",
    "config/paper.yaml",
    "config/host-sme2.yaml",
    "tests/workflow/config-tiny.yaml",
    "tests/workflow/config-sweep.yaml",
]


TINY = "tests/workflow/config-tiny.yaml"


def load(root, rel):
    return yaml.safe_load((root / rel).read_text())


@pytest.mark.parametrize("rel", CONFIGS)
def test_shipped_configs_are_valid(root, rel, tmp_path, monkeypatch):
    # a config's local MNN checkout (`../MNN`) is the reader's; here an empty directory
    (tmp_path / "MNN").mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    check(load(root, rel))


def test_a_local_directory_that_is_not_there_is_named_before_any_job(root, tmp_path, monkeypatch):
    """It passed validation, and the run then failed with Snakemake's "No rule to produce
    resources/mnn/source.json", naming neither the key nor the path."""
    monkeypatch.chdir(tmp_path)
    cfg = load(root, "config/host-sme2.yaml")
    with pytest.raises(ConfigError, match=r"config key `mnn\.source\.path`: '\.\./MNN' is not a"):
        check(cfg)
    proc = run_snakemake(
        root,
        "-n",
        "--configfile",
        str(root / "config/host-sme2.yaml"),
        "--directory",
        str(tmp_path),
        check=False,
    )
    assert proc.returncode != 0
    assert "config key `mnn.source.path`: '../MNN' is not a directory" in proc.stdout + proc.stderr


def _set(cfg, dotted, value):
    *parents, last = dotted.split(".")
    node = cfg
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value


_DELETE = object()

BAD = [
    # (what is wrong, key to change, new value, text the error must contain)
    ("unknown top-level key", "benchmark", {}, "`benchmark`: unknown key; allowed here: ["),
    (
        "typo in a section key",
        "bench.repetitons",
        5,
        "`bench.repetitons`: unknown key; did you mean `bench.repetitions`?",
    ),
    (
        "enum value",
        "variants.one-thread.runtime.precision",
        "lo",
        "`variants.one-thread.runtime.precision`: 'lo' is not one of ['low', 'normal', 'high']",
    ),
    ("wrong type", "bench.repetitions", "ten", "`bench.repetitions`: 'ten' is not of type"),
    ("below minimum", "bench.repetitions", 1, "`bench.repetitions`: 1 is less than the minimum"),
    (
        "missing required key",
        "comparison.baseline",
        _DELETE,
        "`comparison`: 'baseline' is a required property",
    ),
    ("bad name", "experiment", "Quick Start", "`experiment`: 'Quick Start' must match"),
    (
        "unknown shape",
        "models.synth-tiny-vl.synthetic.shape",
        "huge",
        "`models.synth-tiny-vl.synthetic.shape`: 'huge' is not one of "
        "['tiny', 'qwen3-0.6b', 'qwen3-0.6b-layer', 'qwen3-vl-4b-layer', 'llama32-1b-layer', "
        "'qwen25-vl-3b-layer', 'qwen2-vl-2b-layer', 'phi-2-layer', 'tiny-vl']",
    ),
    (
        "two sources",
        "models.synth-tiny",
        {"synthetic": {"shape": "tiny"}, "other": {}},
        "`models.synth-tiny.other`: unknown key",
    ),
    (
        "variant names an unknown engine",
        "variants.one-thread.engine",
        "mnn-gpu",
        "`variants.one-thread.engine`: 'mnn-gpu' is not an engine; defined engines: ['mnn-pypi']",
    ),
    (
        "comparison names an unknown variant",
        "comparison.treatment",
        "sme2-on",
        "`comparison.treatment`: 'sme2-on' is not a variant",
    ),
    (
        "profiling a device that is not there",
        "attribution.devices",
        ["host", "phone"],
        "`attribution.devices`: ['phone'] are not devices; defined devices: ['host']",
    ),
    (
        "engine pin is not exact",
        "engines.mnn-pypi.prebuilt.pypi",
        "mnn>=3",
        "`engines.mnn-pypi.prebuilt.pypi`: 'mnn>=3' must match",
    ),
]


@pytest.mark.parametrize(("what", "key", "value", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_config_names_the_key(root, what, key, value, expected):
    cfg = copy.deepcopy(load(root, "tests/workflow/config-tiny.yaml"))
    _set(cfg, key, value)
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert expected in str(err.value)


def test_snakemake_refuses_bad_config_before_any_job(root, tmp_path):
    cfg = load(root, "tests/workflow/config-tiny.yaml")
    cfg["bench"]["prompt_tokens"] = 0
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake(
        root, "-n", "--configfile", str(path), "--directory", str(tmp_path), check=False
    )
    assert proc.returncode != 0
    assert "config key `bench.prompt_tokens`: 0 is less than the minimum of 1" in (
        proc.stdout + proc.stderr
    )
    assert not (tmp_path / "results").exists()


def test_schema_defaults_are_filled(root):
    cfg = load(root, "tests/workflow/config-tiny.yaml")
    check_schema(cfg, fill_defaults=True)
    assert cfg["stats"]["ci_level"] == 0.95
    assert cfg["bench"]["cooldown_s"] == 0
    assert cfg["correctness"]["min_agreement"] == 1.0


EMULATED = ["config/emulated-sme2.yaml", "config/emulated-vision.yaml"]


@pytest.mark.parametrize("rel", CONFIGS + EMULATED)
def test_the_one_pass_fills_the_defaults_snakemakes_validate_fills(root, rel):
    """The workflow checks a config and fills its defaults in one pass of the schema (parsed
    once, with libyaml); the config it completes is the one Snakemake's own `validate` gives."""
    from snakemake.utils import validate

    ours, snakemakes = load(root, rel), load(root, rel)
    check_schema(ours, fill_defaults=True)
    validate(snakemakes, str(root / "workflow/schemas/config.schema.yaml"))
    assert ours == snakemakes


@pytest.mark.parametrize(
    ("rel", "must_run"),
    [
        (
            "config/paper.yaml",
            [
                "fetch_ndk",
                "fetch_source",
                "build_engine",
                "fetch_modelscope_model",
                "push_to_device",
                "run_bench",
                "write_summary_report",
            ],
        ),
        (
            "config/paper.yaml config/paper-export.yaml",
            ["fetch_modelscope_model", "fetch_modelscope_checkpoint", "export_mnn_model"],
        ),
        ("config/host-sme2.yaml", ["build_engine", "make_synthetic_model", "run_bench"]),
        ("config/paper.yaml config/paper-control.yaml", ["fetch_engine_archives", "fetch_ndk"]),
        (
            "config/predict-x300.yaml config/predict-per-instruction.yaml",
            ["fetch_llvm_mca", "profile_kernels", "predict_gain"],
        ),
        (
            "config/emulated-paper.yaml",
            [
                "fetch_emulation_userland",
                "fetch_engine_archives",
                "fetch_executorch_exporter",  # the fourth stack's exporter, and its export
                "convert_pte_model",
            ],
        ),
    ],
)
def test_whole_dag_dry_run(root, tmp_path, monkeypatch, rel, must_run):
    """`snakemake -n` plans every stage from toolchain to report, offline, and its plan's
    "network" line names what each fetch job it plans downloads (plan/overview.downloads)."""
    work = tmp_path / "work"
    (tmp_path / "MNN").mkdir()  # where a config's `../MNN` checkout would be
    files = [str(root / name) for name in rel.split()]
    proc = run_snakemake(root, "-n", "--configfile", *files, "--directory", str(work))
    for rule in must_run:
        assert f"\n{rule} " in proc.stdout, rule
    config = {}
    for name in files:
        update_config(config, load(root, name))
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)
    fetched = downloads(plan_of(config, files[-1], root))
    planned = set(re.findall(r"^(fetch_\w+) +\d+$", proc.stdout, re.MULTILINE))
    assert {rule for rule, _ in fetched} == planned
    said = (proc.stdout + proc.stderr).splitlines()
    (network,) = [x for x in said if "network, where not fetched yet" in x] or [""]
    assert network.endswith(", ".join(what for _, what in fetched))
    if rel == "config/paper.yaml":  # one model by default: the export is an explicit option
        assert "\nexport_mnn_model " not in proc.stdout
        # the phone's benchmark asks the article's photo question too, through engines that
        # take images (MNN's builds: mnn_vision after llm_bench)
        assert "the vision phase asks config/images/test-card.png" in proc.stdout
        engines = load(root, rel)["engines"]
        assert all(kind_of_spec(spec).takes_images for spec in engines.values())


def test_build_engines_need_a_source_and_android_needs_the_ndk(root):
    cfg = load(root, "config/paper.yaml")
    del cfg["toolchains"]
    del cfg["mnn"]["source"]
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert "config key `mnn.source`" in str(err.value)
    assert "config key `toolchains.ndk`" in str(err.value)


def test_a_configfile_replaces_the_default_and_config_overrides_adjust_it(root, tmp_path):
    """replace-workflow-config (profiles/default): --configfile X is X alone, never X merged
    into the default; --config key=value alone adjusts the default experiment."""
    default_model = next(iter(load(root, "config/config.yaml")["models"]))
    tiny = run_snakemake(
        root, "-n", "--configfile", str(root / TINY), "--directory", str(tmp_path)
    ).stdout
    assert "results/tiny/" in tiny and default_model not in tiny
    renamed = run_snakemake(
        root, "-n", "--config", "experiment=renamed", "--directory", str(tmp_path)
    ).stdout
    assert "results/renamed/" in renamed and default_model in renamed


def test_the_config_catalog_is_generated_from_the_schema(root):
    from mnnrepro.config import SCHEMA_PATH, load_schema
    from mnnrepro.plan.catalog import catalog

    expected = catalog(load_schema(), root / "config")
    assert root / "workflow" / "schemas" / "config.schema.yaml" == SCHEMA_PATH
    assert (root / "config" / "README.md").read_text() == expected, (
        "regenerate: PYTHONPATH=workflow/scripts python -m mnnrepro.plan.catalog > config/README.md"
    )


def test_params_from_the_config_do_not_depend_on_the_yamls_key_order():
    """Snakemake reruns a rule whose param prints differently; a model spec written in another
    key order must not export the model again (it did: tests/workflow's sweep beside the
    quickstart)."""
    from mnnrepro.config import canonical

    one = yaml.safe_load("m: {synthetic: {shape: qwen3-0.6b, seed: 0, quant_bit: 4}}")
    two = yaml.safe_load("m: {synthetic: {quant_bit: 4, seed: 0, shape: qwen3-0.6b}}")
    assert repr(one) != repr(two)  # what Snakemake compared
    assert repr(canonical(one)) == repr(canonical(two))
    assert canonical({"l": [{"b": 1, "a": 2}]}) == {"l": [{"a": 2, "b": 1}]}
    assert list(canonical({"l": [{"b": 1, "a": 2}]})["l"][0]) == ["a", "b"]


def test_a_replay_does_not_need_the_archived_runs_local_directories(root, tmp_path, monkeypatch):
    """The shipped archive was measured with a checkout at /work/mnn-src: a replay builds
    nothing, so its config is checked without the local directories (this test failed the
    replay of the shipped archive in benchmarks/install_public.py before)."""
    monkeypatch.chdir(tmp_path)
    cfg = load(root, "config/host-sme2.yaml")
    check(cfg, local_paths=False)
    with pytest.raises(ConfigError):
        check(cfg)


def test_bench_csv_has_one_column_per_runtime_setting_of_the_schema():
    from mnnrepro.analysis.tables import BENCH_COLUMNS, OPTIONAL_RUNTIME_COLUMNS, RUNTIME_COLUMNS
    from mnnrepro.config import load_schema, runtime_defaults

    assert set(RUNTIME_COLUMNS) == set(runtime_defaults())
    every = set(load_schema()["$defs"]["runtime"]["properties"])
    assert every == set(RUNTIME_COLUMNS) | set(OPTIONAL_RUNTIME_COLUMNS)
    assert set(RUNTIME_COLUMNS) <= set(BENCH_COLUMNS) and "runtime" not in BENCH_COLUMNS


def test_a_misspelled_key_is_named_with_what_was_meant_and_no_error_derived_from_it(root):
    cfg = copy.deepcopy(load(root, "tests/workflow/config-tiny.yaml"))
    cfg["variantz"] = cfg.pop("variants")
    with pytest.raises(ConfigError) as err:
        check(cfg)
    text = str(err.value)
    assert text == "config key `variantz`: unknown key; did you mean `variants`?"
    assert "'variants' is a required property" not in text  # derived from the typo


def test_a_bad_config_file_is_one_line_naming_the_file_the_key_and_what_to_do(root, tmp_path):
    """What Snakemake prints: the error line alone, not wrapped in a WorkflowError with the
    Snakefile's name, line and frame (and, for a typo, the key that was meant)."""
    bad = tmp_path / "mine.yaml"
    bad.write_text("bench:\n  repetiton: 3\n")
    proc = run_snakemake(
        root, "-n", "--configfile", str(root / "config/config.yaml"), str(bad), check=False
    )
    assert proc.returncode != 0
    lines = [x for x in (proc.stdout + proc.stderr).splitlines() if x.strip()]
    expected = f"error: {bad}: config key `bench.repetiton`: unknown key; did you mean"
    assert lines[-1] == f"{expected} `bench.repetitions`?", lines
    assert not any("WorkflowError" in x or x.lstrip().startswith("File ") for x in lines), lines


def test_a_patch_that_is_not_its_pin_is_named_when_the_config_is_read(root, tmp_path, monkeypatch):
    """config/mnn-vector-length.yaml pins its patch by sha256: the dry run checks it (the
    engine's own key, not mnn.patches), a changed file and a missing one alike."""
    import shutil

    from mnnrepro.plan.checks import patch_pin_problems

    config = yaml.safe_load((root / "config" / "mnn-vector-length.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "patches").mkdir()
    patch = tmp_path / "patches" / "mnn-sme2-vector-length.patch"
    shutil.copy(root / "patches" / patch.name, patch)
    assert patch_pin_problems(config) == []
    with open(patch, "a") as fh:
        fh.write("\n")
    (problem,) = patch_pin_problems(config)
    assert problem.startswith("config key `engines.mnn-361-patched.build.patches.0.sha256`:")
    patch.unlink()
    (problem,) = patch_pin_problems(config)
    assert problem.startswith("config key `engines.mnn-361-patched.build.patches.0.path`:")


def test_a_claim_the_experiment_can_never_measure_is_named_when_the_config_is_read(root):
    """A claim on an image phase needs an image set and a model that takes images; the tiny
    experiment (a vision shape, the default image set) has both, so its claim passes."""
    cfg = copy.deepcopy(load(root, "tests/workflow/config-tiny.yaml"))
    cfg["comparison"]["claims"] = {"vision": 0.2}
    check(copy.deepcopy(cfg))
    no_images = copy.deepcopy(cfg)
    no_images.setdefault("bench", {})["vision"] = {"images": []}
    with pytest.raises(ConfigError, match=r"`comparison\.claims\.vision`: no image set"):
        check(no_images)
    text_only = copy.deepcopy(cfg)
    text_only["models"] = {"synth-tiny": {"synthetic": {"shape": "tiny", "seed": 0}}}
    with pytest.raises(ConfigError, match=r"`comparison\.claims\.vision`: no model .* images"):
        check(text_only)


def test_an_image_path_that_leaves_its_directory_is_refused(root, tmp_path, monkeypatch):
    from mnnrepro.config import vision_image_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    (tmp_path / "card.png").write_bytes(b"png")
    config = {"bench": {"vision": {"images": ["../card.png"]}}}
    monkeypatch.chdir(tmp_path / "in")
    with pytest.raises(ConfigError, match=r"`bench\.vision\.images\.0`: '\.\./card\.png' leaves"):
        vision_image_files(config, root)
    assert vision_image_files({"bench": {"vision": {"images": [str(tmp_path / "card.png")]}}}, root)


def test_mnns_sme2_settings_are_refused_where_no_engine_reads_them(root):
    """On an engine kind without them (llama.cpp), as a ratio MNN cannot read (x or y of
    8*x + y zero), and, before any run, on an engine whose libraries hold no such setting
    (the record's `reads_settings`, read from the engine's own binaries)."""
    from mnnrepro.engines.registry import unread_settings

    cfg = copy.deepcopy(load(root, "tests/workflow/config-control.yaml"))
    check(copy.deepcopy(cfg))
    cfg["variants"]["one-thread"]["runtime"]["cpu_sme2_neon_division_ratio"] = 41
    check(copy.deepcopy(cfg))  # 5:1 in prefill, 1:1 in decode
    llama = copy.deepcopy(cfg)
    llama["variants"]["llama-sme-off"]["runtime"]["cpu_sme_core_num"] = 1
    no_such = (
        r"`variants\.llama-sme-off\.runtime\.cpu_sme_core_num`: engine llama \(llamacpp\) does "
        r"not read it"
    )
    with pytest.raises(ConfigError, match=no_such):
        check(llama)
    cfg["variants"]["one-thread"]["runtime"]["cpu_sme2_neon_division_ratio"] = 40
    with pytest.raises(
        ConfigError,
        match=r"`variants\.one-thread\.runtime\.cpu_sme2_neon_division_ratio`: 40 is 8\*5 \+ 0",
    ):
        check(cfg)
    variants = {"one": {"engine": "old", "runtime": {"cpu_sme_core_num": 1}}}
    old = {"engine": "old", "kind": "build", "version": "3.2.5"}
    reads = {"reads_settings": ["cpu_sme2_neon_division_ratio"]}
    (problem,) = unread_settings(
        full_variants(variants), {"old": EngineRecord.of({**old, **reads})}
    )
    assert problem.startswith("config key `variants.one.runtime.cpu_sme_core_num`: engine old")
    reads = {"reads_settings": ["cpu_sme_core_num"]}
    assert (
        unread_settings(full_variants(variants), {"old": EngineRecord.of({**old, **reads})}) == []
    )


def test_every_runtime_key_an_engine_kind_does_not_read_is_refused_when_the_plan_is_made(root):
    """The whole class, not one key: every key of the schema's `runtime` on every engine kind
    of config-control.yaml (MNN's wheel, llama.cpp, ONNX Runtime GenAI) is accepted exactly
    where the kind declares it reads it (EngineKind.runtime_keys), and otherwise refused with
    one line naming the key; no kind takes a key it would drop (before, llama.cpp ran with
    MNN's `precision` and MNN with ONNX Runtime's `session_options`, silently)."""
    from mnnrepro.config import load_schema
    from mnnrepro.engines.registry import kind_of_spec

    cfg = load(root, "tests/workflow/config-control.yaml")
    schema = load_schema()["$defs"]["runtime"]["properties"]
    values = {
        "session_options": {"intra_op.allow_spinning": "0"},
        "cpu_sme_core_num": 1,
        "cpu_sme2_neon_division_ratio": 41,
    }
    kinds_seen = set()
    for variant in ("one-thread", "llama-sme-off", "ort-default"):
        kind = kind_of_spec(cfg["engines"][cfg["variants"][variant]["engine"]])
        kinds_seen.add(kind.kind)
        for key, spec in schema.items():
            bad = copy.deepcopy(cfg)
            bad["variants"][variant]["runtime"][key] = values.get(key, spec.get("default"))
            if key in kind.runtime_keys:
                check(bad)
                continue
            with pytest.raises(ConfigError, match=rf"`variants\.{variant}\.runtime\.{key}`: "):
                check(bad)
    assert len(kinds_seen) == 3  # MNN's wheel, llama.cpp, ONNX Runtime GenAI


def test_the_wheel_reads_mnns_sme2_settings_in_its_own_library():
    """describe_prebuilt reads them from the installed wheel's native libraries (the strings
    of MNN's config keys; an MNN without a setting has no such string)."""
    from mnnrepro.engines.mnn_wheel.kind import describe_prebuilt

    record = describe_prebuilt("mnn-pypi", "mnn==3.6.1")
    assert record["reads_settings"] == ["cpu_sme2_neon_division_ratio", "cpu_sme_core_num"]


def test_the_onnx_runtime_switch_is_refused_where_its_library_would_ignore_it():
    """`mlas.disable_kleidiai` is exempt from the held-keys check only in a library with no
    KleidiAI kernel (the x86-64 wheel: nothing to switch off, an equality pair); in an arm64
    library with KleidiAI's kernels and without the key, ONNX Runtime would ignore it and
    leave them on in the baseline: one line naming the key."""
    from mnnrepro.engines.ort_genai.kind import OrtGenaiEngine
    from mnnrepro.engines.registry import EngineRecord, unread_session_options

    variant = full_variants(
        {"off": {"engine": "ort", "runtime": {"session_options": {"mlas.disable_kleidiai": "1"}}}}
    )["off"]
    library = {"session_options": ["session.intra_op.allow_spinning"], "kleidiai_kernels": []}
    record = {"engine": "ort", "kind": OrtGenaiEngine.kind, "version": "1.29", "library": library}

    def unread(library: dict) -> list[str]:
        return unread_session_options(
            "off", variant, EngineRecord.of({**record, "library": library})
        )

    assert unread(library) == []
    kernels = {**library, "kleidiai_kernels": ["kai_run_matmul_clamp_f32_sme2"]}
    (line,) = unread(kernels)
    assert line.startswith(
        "config key `variants.off.runtime.session_options.mlas.disable_kleidiai`: engine ort"
    )
    assert "leaving KleidiAI's kernels on" in line
    held = {**kernels, "session_options": [*kernels["session_options"], "mlas.disable_kleidiai"]}
    assert unread(held) == []


@pytest.mark.parametrize(
    ("repetitions", "expected"),
    [
        # planned looks that do not fit in the blocks: set() would quietly make them fewer
        (
            {"min": 6, "max": 8, "until": "verdict", "looks": 5},
            "`bench.repetitions.looks`: 5 "
            "planned looks do not fit in blocks 6 to 8 (3 blocks): the run would judge at 3 looks",
        ),
        # a budget only a run that stops on its verdict reads (the schema ties `looks` to it)
        (
            {"min": 6, "max": 10, "target_half_width": 0.05, "budget_s": 600},
            "`bench.repetitions.budget_s`: only a run that stops on its verdict",
        ),
    ],
)
def test_repetition_options_the_run_would_not_honour_as_written_are_refused(
    root, repetitions, expected
):
    cfg = copy.deepcopy(load(root, "config/config.yaml"))
    check(copy.deepcopy(cfg))
    cfg["bench"]["repetitions"] = repetitions
    with pytest.raises(ConfigError, match=re.escape(expected)):
        check(cfg)
    fits = {**repetitions, "until": "verdict", "looks": 3, "max": 10}
    check({**cfg, "bench": {**cfg["bench"], "repetitions": fits}})
