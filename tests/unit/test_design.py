"""The types that cross the rule boundary: the design every judging job gets (design.Design),
engine records with their kind (engines.registry.EngineRecord), and a pair's mode on a device,
decided once (engines.pairs.modes_record)."""

from __future__ import annotations

import json
import re
from dataclasses import FrozenInstanceError

import pytest
import yaml
from conftest import design_of

from mnnrepro.config import with_schema_defaults
from mnnrepro.design import Design
from mnnrepro.engines.mnn_wheel.kind import PrebuiltEngine
from mnnrepro.engines.pairs import Pair, modes_of, modes_record
from mnnrepro.engines.registry import EngineRecord
from mnnrepro.errors import ReproError
from mnnrepro.files import read_json, write_json
from mnnrepro.plan.plan import plan_of
from mnnrepro.sections import SECTION_TYPES, Bench, configured_names


def test_the_design_takes_only_complete_sections_and_the_plans_spec_reads_back(root):
    """Design.of fills no default: a section the schema did not complete is refused, naming
    its config key and the missing keys; the plan's spec of the quickstart config (complete)
    reads back, through JSON, to the plan's design."""
    complete = {name: with_schema_defaults({}, "properties", name) for name in ("stats", "bench")}
    spec = {
        "experiment": "x",
        "variants": {},
        "comparison": with_schema_defaults(
            {"baseline": "a", "treatment": "b"}, "properties", "comparison"
        ),
        **complete,
    }
    assert Design.of(spec).stats.ci_level == complete["stats"]["ci_level"]
    partial = {**complete["stats"]}
    del partial["ci_level"]
    with pytest.raises(ReproError, match=r"config key `stats`: missing \['ci_level'\]"):
        Design.of({**spec, "stats": partial})
    with pytest.raises(ReproError, match=r"config key `bench`: unknown \['warmups'\]"):
        Design.of({**spec, "bench": {**complete["bench"], "warmups": 2}})
    path = root / "config" / "config.yaml"
    plan = plan_of(yaml.safe_load(path.read_text()), path, root)
    assert Design.of(json.loads(json.dumps(plan.design_spec))) == plan.design


def test_each_section_type_holds_exactly_its_schema_sections_keys(root):
    """A key added to a section of the schema without its type's field (or a field without
    its key) would be refused on every config: caught here, naming the section."""
    schema = yaml.safe_load((root / "workflow/schemas/config.schema.yaml").read_text())
    assert set(SECTION_TYPES) == {"bench", "stats", "correctness", "attribution"} | {
        "bandwidth",
        "engine_tests",
    }
    for name, section in SECTION_TYPES.items():
        assert configured_names(section) == set(schema["properties"][name]["properties"]), name


def test_a_section_is_read_only_and_written_as_configured(tmp_path):
    bench = Bench.of(with_schema_defaults({"thermal_zones": ["cpu*"]}, "properties", "bench"))
    with pytest.raises(FrozenInstanceError):
        bench.warmup = 3
    with pytest.raises(TypeError):
        bench.vision["text"] = "another question"
    write_json(tmp_path / "bench.json", {"bench": bench})
    written = read_json(tmp_path / "bench.json")["bench"]
    assert written == with_schema_defaults({"thermal_zones": ["cpu*"]}, "properties", "bench")


def test_the_pairs_are_the_main_one_then_also_in_config_order_and_the_aa_twin_is_named():
    design = design_of(
        {
            "comparison": {
                "baseline": "off",
                "treatment": "on",
                "aa_control": True,
                "also": [{"baseline": "masked", "treatment": "on"}],
            },
            "variants": {v: {"engine": f"e-{v}"} for v in ("off", "on", "masked")},
        }
    )
    comparison = design.comparison
    assert [p.key for p in comparison.pairs] == ["comparison", "comparison.also.0"]
    assert comparison.pair_names == [("off", "on"), ("masked", "on")]
    assert comparison.aa_variant == "off-again"
    assert design.variant_engines["masked"] == "e-masked"


def test_an_engine_record_carries_its_kind_and_is_written_as_the_mapping_it_was(tmp_path):
    fields = {"engine": "e", "kind": "prebuilt", "pin": "mnn==3.6.1", "files": []}
    record = EngineRecord.of(fields)
    assert record.kind is PrebuiltEngine and record.name == "e" and record.as_written == fields
    with pytest.raises(TypeError):  # read by its fields, its kind alone reads what was written
        record["engine"]
    assert EngineRecord.of(record) is record  # built once: a record stays as it is
    write_json(tmp_path / "spec.json", {"engine": record})
    assert read_json(tmp_path / "spec.json") == {"engine": fields}
    with pytest.raises(ValueError, match="engine record of unknown kind 'gguf'"):
        EngineRecord.of({**fields, "kind": "gguf"})


def test_a_pairs_mode_is_decided_once_per_device_and_read_back_by_its_names():
    design = design_of(
        {
            "comparison": {
                "baseline": "off",
                "treatment": "on",
                "on_non_sme2_device": "fallback-check",
            },
            "variants": {"off": {"engine": "off"}, "on": {"engine": "on"}},
        }
    )
    build = {"kind": "build", "target_arch": "aarch64", "files": []}
    engines = {
        "off": EngineRecord.of({**build, "engine": "off", "sme2": {"sme2_kernel_count": 0}}),
        "on": EngineRecord.of({**build, "engine": "on", "sme2": {"sme2_kernel_count": 9}}),
    }
    phone = modes_record(design, engines, {"device": "x300", "sme2": True})
    old = modes_record(design, engines, {"device": "d9400", "sme2": False})
    assert phone["modes"] == [
        {"pair": "comparison", "baseline": "off", "treatment": "on", "mode": "claim"}
    ]
    assert modes_of(phone) == {("off", "on"): "claim"}
    assert modes_of(old) == {("off", "on"): "fallback"}
    assert repr(modes_of(old)) == "device d9400: off vs on fallback"  # the gate's log line
    # one device's modes are a read-only value: a pair it does not hold, or a mode outside
    # the vocabulary, is refused naming the device
    with pytest.raises(TypeError):
        modes_of(phone)[("off", "on")] = "equal"
    with pytest.raises(KeyError, match=r"no mode for the pair \('on', 'off'\) on device x300"):
        modes_of(phone)[("on", "off")]
    wrong = {**phone, "modes": [{**phone["modes"][0], "mode": "faster"}]}
    with pytest.raises(ValueError, match=r"device x300: unknown pair modes \['faster'\]"):
        modes_of(wrong)


def test_a_pair_that_switches_something_else_is_judged_against_its_claim_everywhere():
    """Two builds for x86-64 (an instruction-set pair, as config/predict-host-ratio.yaml's):
    without `switches` they are an SME2 equality check; with `switches: other` the gain is
    judged against its claim, no SME2 kernel is expected to run, and the record says so."""
    build = {"kind": "build", "target_arch": "x86_64", "files": [], "sme2": {}}
    engines = {e: EngineRecord.of({**build, "engine": e}) for e in ("sse", "avx2")}
    variants = {"sse": {"engine": "sse"}, "avx2": {"engine": "avx2"}}
    host = {"device": "host", "sme2": False}
    also = {"baseline": "avx2", "treatment": "sse"}
    as_sme2 = design_of(
        {
            "comparison": {"baseline": "sse", "treatment": "avx2", "also": [also]},
            "variants": variants,
        }
    )
    assert modes_of(modes_record(as_sme2, engines, host)) == {
        ("sse", "avx2"): "equal",
        ("avx2", "sse"): "equal",
    }
    switched = {"baseline": "sse", "treatment": "avx2", "switches": "other"}
    other = design_of(
        {"comparison": {**switched, "also": [{**also, "switches": "other"}]}, "variants": variants}
    )
    record = modes_record(other, engines, host)
    assert modes_of(record) == {("sse", "avx2"): "claim", ("avx2", "sse"): "claim"}
    assert [m.get("switches") for m in record["modes"]] == ["other", "other"]
    # one SME2 build at 1 and 2 threads on an SME2 phone: its claim, and no expectation that
    # the treatment runs SME2 kernels the baseline does not (both run them)
    sme2 = {"kind": "build", "target_arch": "aarch64", "files": [], "engine": "on"}
    on = {"on": EngineRecord.of({**sme2, "sme2": {"sme2_kernel_count": 9}})}
    threads = design_of(
        {
            "comparison": {"baseline": "one", "treatment": "two", "switches": "other"},
            "variants": {"one": {"engine": "on"}, "two": {"engine": "on"}},
        }
    )
    assert modes_of(modes_record(threads, on, {"device": "x300", "sme2": True})) == {
        ("one", "two"): "claim"
    }
    assert not Pair.compared(threads)[0].runs_sme2("claim", on)
    # each pair says for itself: the main one switches something else, `also`'s SME2
    mixed = design_of({"comparison": {**switched, "also": [also]}, "variants": variants})
    assert modes_of(modes_record(mixed, engines, host)) == {
        ("sse", "avx2"): "claim",
        ("avx2", "sse"): "equal",
    }


PACKAGE_READS_CONFIG = re.compile(r"\bconfig\[|\bconfig\.get\(")


def test_the_config_mapping_is_read_only_by_the_plan_and_config(root):
    """Below the plan, stages receive types (design.Design, the sections a helper needs):
    no module outside plan/ and config.py indexes the config mapping."""
    package = root / "workflow" / "scripts" / "mnnrepro"
    readers = [
        f"{path.relative_to(package)}:{n}"
        for path in sorted(package.rglob("*.py"))
        if path.parent.name != "plan" and path.name != "config.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PACKAGE_READS_CONFIG.search(line)
    ]
    assert readers == []


def test_an_engine_records_kind_is_looked_up_only_where_records_are_read(root):
    """engines.registry.EngineRecord.of looks the kind up; everything else asks record.kind."""
    scripts = root / "workflow" / "scripts"
    lookups = [
        str(path.relative_to(scripts))
        for path in sorted(scripts.rglob("*.py"))
        if "kind_of_record(" in path.read_text() and path.name != "registry.py"
    ]
    assert lookups == []


def test_a_variant_is_read_as_the_plan_completed_it(root):
    """The plan's variant specs hold every runtime key (the schema filled them once, when the
    plan was made); a variant reads them as they are and refuses a spec without its runtime
    or env, instead of filling one in itself."""
    from mnnrepro.design import Variant

    path = root / "config" / "config.yaml"
    plan = plan_of(yaml.safe_load(path.read_text()), path, root)
    schema = yaml.safe_load((root / "workflow/schemas/config.schema.yaml").read_text())
    defaulted = {
        k for k, spec in schema["$defs"]["runtime"]["properties"].items() if "default" in spec
    }
    for name, spec in plan.variant_specs().items():
        variant = Variant.of(name, spec)
        assert set(variant.runtime) == defaulted and variant.env == {}, name
    with pytest.raises(KeyError, match="runtime"):
        Variant.of("two", {"engine": "e", "env": {}})


def test_a_model_entry_is_read_once_as_where_it_comes_from():
    from mnnrepro.models.spec import Model

    tiny = Model.of(
        "t", {"synthetic": {"shape": "tiny", "seed": 3, "quant_bit": 4, "quant_block": 64}}
    )
    assert (tiny.source, tiny.synthetic.shape, tiny.synthetic.seed, tiny.weights) == (
        "synthetic",
        "tiny",
        3,
        None,
    )
    assert tiny.synthetic.settings == {
        "shape": "tiny",
        "seed": 3,
        "quant_bit": 4,
        "quant_block": 64,
    }
    mnn = {"id": "MNN/Qwen3-VL-4B-Instruct-MNN", "revision": "r1"}
    original = {"id": "Qwen/Qwen3-VL-4B-Instruct", "revision": "r2"}
    download = Model.of("d", {"modelscope": mnn, "checkpoint": {"modelscope": original}})
    assert download.source == "modelscope"
    assert (download.repository("model"), download.repository("checkpoint")) == (mnn, original)
    exported = Model.of("e", {"export": {"from": {"path": "/ckpt"}, "hqq": True}})
    assert (exported.source, exported.weights, exported.synthetic) == (
        "export",
        {"path": "/ckpt"},
        None,
    )
