"""Untrusted input never becomes a result: damaged or edited files, implausible values,
duplicate keys and reserved names each stop with one line naming the file or the key.

The records here are written by the tests themselves (their numbers are inputs, never
asserted as results); the end-to-end tampering of a real run is in tests/workflow."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mnnrepro.config import ConfigError, check_config_files, load_schema
from mnnrepro.errors import DataError, ReproError
from mnnrepro.files import read_json
from mnnrepro.plan.checks import check
from mnnrepro.records import check_same_table, read_record, read_table

ROOT = Path(__file__).resolve().parents[2]


# ---- a damaged file: one line with the path, what was expected and what was found ----------

DAMAGED = {
    "truncated": (b'{"status": "ok", "results": [{"phase": "prefill"', r"truncated at byte 48"),
    "empty": (b"", r"not valid JSON \(empty\)"),
    "garbage": (b'{"a": 1,, "b": 2}', r"not valid JSON \(Expecting .* line 1, column 9\)"),
    "binary": (b"\xff\xfe\x00junk", r"not UTF-8 text \(byte 0\)"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_json_file_is_named_with_what_is_wrong(tmp_path, case):
    data, found = DAMAGED[case]
    path = tmp_path / "rep-003.json"
    path.write_bytes(data)
    with pytest.raises(DataError, match=found) as err:
        read_record(path, "raw_record")
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert message.endswith("delete it to re-measure that repetition")


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataError, match=r"nothing\.json: missing"):
        read_json(tmp_path / "nothing.json")


GOOD_RAW = {
    "status": "ok",
    "device": "host",
    "variant": "a",
    "invocation": {"block": 0, "position": 0, "run_order": 0, "variant": "a"},
    "spec": {"engine": {"engine": "e", "version": "3.6.1"}, "runtime": {}},
    "bench": {"prompt_tokens": 8, "generate_tokens": 4, "warmup": 0},
    "engine": {},
    "results": [{"phase": "prefill", "tokens": 8, "seconds": 0.5, "tps": 16.0}],
}


def without(record: dict, dotted: str) -> dict:
    record = copy.deepcopy(record)
    *parents, last = dotted.split(".")
    node = record
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    del node[last]
    return record


def replaced(record: dict, dotted: str, value) -> dict:
    record = copy.deepcopy(record)
    *parents, last = dotted.split(".")
    node = record
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return record


@pytest.mark.parametrize(
    "record, field",
    [
        (without(GOOD_RAW, "results"), "'results' is a required property in `<top level>`"),
        (without(GOOD_RAW, "invocation.block"), "'block' is a required property in `invocation`"),
        (replaced(GOOD_RAW, "results.0.tps", "fast"), "field `results.0.tps` is 'fast'"),
        (replaced(GOOD_RAW, "results.0.seconds", 0), "field `results.0.seconds` is 0"),
        (replaced(GOOD_RAW, "results.0.phase", "both"), "field `results.0.phase` is 'both'"),
        (replaced(GOOD_RAW, "bench", []), "field `bench` is []"),
    ],
    ids=["no-results", "no-block", "tps-text", "zero-seconds", "bad-phase", "bench-list"],
)
def test_a_record_missing_a_field_or_of_the_wrong_type_names_the_field(tmp_path, record, field):
    path = tmp_path / "rep-000.json"
    path.write_text(json.dumps(record))
    with pytest.raises(DataError) as err:
        read_record(path, "raw_record")
    assert str(err.value).startswith(f"{path}: not a valid raw record: ")
    assert field in str(err.value)


def test_every_record_kind_is_refused_when_it_is_not_even_an_object(tmp_path):
    from mnnrepro.records import HINTS

    path = tmp_path / "x.json"
    path.write_text("[]")
    for kind in HINTS:
        with pytest.raises(DataError, match=rf"not a valid {kind.replace('_', ' ')}"):
            read_record(path, kind)


def test_an_edited_speed_in_a_raw_record_is_refused(tmp_path):
    """tok/s is tokens / seconds in every engine's record; a raw file whose speed was edited
    (and its hash in the run index with it) is still refused."""
    import hashlib

    from mnnrepro.analysis.tables import bench_table

    record = replaced(GOOD_RAW, "results.0.tps", 64.0)
    raw = tmp_path / "rep-000.json"
    raw.write_text(json.dumps(record))
    index = {
        "device": "host",
        "emulated": False,
        "experiment": "x",
        "model": "m",
        "runs": [{"raw": str(raw), "sha256": hashlib.sha256(raw.read_bytes()).hexdigest()}],
    }
    with pytest.raises(DataError, match=r"rep-000\.json: field `results\.0\.tps` is 64 tok/s"):
        bench_table({"runs.json": index})


def test_a_raw_record_changed_after_indexing_is_refused_naming_both_files(tmp_path):
    from mnnrepro.analysis.tables import bench_table

    raw = tmp_path / "rep-000.json"
    raw.write_text(json.dumps(GOOD_RAW))
    index = {"device": "host", "emulated": False, "experiment": "x", "model": "m"}
    index["runs"] = [{"raw": str(raw), "sha256": "0" * 64}]
    with pytest.raises(DataError) as err:
        bench_table({"results/x/runs/host/m.json": index})
    assert str(err.value).startswith(f"{raw}: content changed since results/x/runs/host/m.json")


def test_an_edited_table_names_the_line_and_the_column(tmp_path):
    table = pd.DataFrame({"phase": ["prefill", "decode"], "tps": [10.5, 3.25], "raw_file": "r"})
    path = tmp_path / "bench.csv"
    edited = table.copy()
    edited.loc[1, "tps"] = 13.0
    edited.to_csv(path, index=False)
    with pytest.raises(DataError) as err:
        check_same_table(path, table, "the raw records", "delete it")
    assert str(err.value) == (
        f"{path}: line 3, column `tps` is '13.0' but the raw records give '3.25' (r); delete it"
    )
    table.iloc[:1].to_csv(path, index=False)
    with pytest.raises(DataError, match="has 1 rows, the raw records give 2"):
        check_same_table(path, table, "the raw records", "delete it")
    table.to_csv(path, index=False)
    check_same_table(path, table, "the raw records", "delete it")


@pytest.mark.parametrize(
    "text, found",
    [("", r"empty \(no header line\)"), ("a,b\n1,2\n", r"columns \['tps'\] missing")],
)
def test_a_bad_table_is_named(tmp_path, text, found):
    path = tmp_path / "summary.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=rf"summary\.csv: {found}"):
        read_table(path, ["tps"], "delete it")


# ---- a job shows the project's own errors as one line, anything else with its traceback ------

JOB = """
import sys
sys.path.insert(0, {scripts!r})
from mnnrepro.errors import DataError
from mnnrepro.logs import log_to
log_to({log!r})
{raise_}
"""


@pytest.mark.parametrize(
    "raise_, one_line",
    [
        ("raise DataError('results/x/bench.csv', 'line 3, column `tps` is 1', 'delete it')", True),
        ("{}['missing']", False),
    ],
    ids=["project-error", "bug"],
)
def test_a_job_prints_its_own_errors_in_one_line(tmp_path, raise_, one_line):
    log = tmp_path / "job.log"
    script = JOB.format(scripts=str(ROOT / "workflow/scripts"), log=str(log), raise_=raise_)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 1
    text = log.read_text()
    if one_line:
        assert text == "error: results/x/bench.csv: line 3, column `tps` is 1; delete it\n"
    else:
        assert "Traceback" in text and "KeyError: 'missing'" in text


def test_every_error_type_of_the_package_is_a_project_error():
    """Each module's own error class derives from ReproError, so a job shows it in one line."""
    import importlib
    import pkgutil

    import mnnrepro

    found = []
    for info in pkgutil.walk_packages(mnnrepro.__path__, "mnnrepro."):
        if info.name.endswith(("llmexport_main", "python_runner")):
            continue  # run as their own programs
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Exception)
                and value.__module__ == info.name
            ):
                found.append(value)
    assert len(found) >= 10
    assert [e.__name__ for e in found if not issubclass(e, ReproError)] == []


# ---- implausible values: every bounded key of the schema, over its bound ---------------------


def bounded_keys(schema: dict) -> list[tuple[str, dict]]:
    """(dotted config key, its schema) of every property with an `x-bound` explanation."""
    defs = schema["$defs"]
    found = []

    def walk(node, key):
        if "$ref" in node:
            node = {**defs[node["$ref"].split("/")[-1]], **node}
        if "x-bound" in node:
            found.append((key, node))
        for branch in node.get("oneOf", []):  # e.g. repetitions: a number or {min, max, ...}
            walk(branch, key)
        for name, child in node.get("properties", {}).items():
            walk(child, f"{key}.{name}" if key else name)
        if "items" in node:  # a list's values, e.g. bench.sweep.prompt_tokens.0
            walk(node["items"], f"{key}.0")

    walk(schema, "")
    variant_runtime = defs["runtime"]["properties"]
    found += [(f"variants.*.runtime.{k}", v) for k, v in variant_runtime.items() if "x-bound" in v]
    return found


def quickstart() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def set_key(config: dict, dotted: str, value) -> None:
    node = config
    *parents, last = dotted.split(".")
    for key in parents:
        node = next(iter(node.values())) if key == "*" else node.setdefault(key, {})
    node[last] = value


BOUNDED = bounded_keys(load_schema())


def test_the_schema_bounds_every_count_size_and_tolerance():
    keys = {k for k, _ in BOUNDED}
    for key in [
        "bench.repetitions",
        "bench.repetitions.max",
        "bench.max_other_load",
        "bench.prompt_tokens",
        "bench.generate_tokens",
        "bench.timeout_s",
        "stats.n_boot",
        "comparison.tolerance",
        "comparison.claims.prefill",
        "comparison.claims.decode",
        "correctness.max_new_tokens",
        "variants.*.runtime.thread_num",
    ]:
        assert key in keys, key


@pytest.mark.parametrize("key, spec", BOUNDED, ids=[k for k, _ in BOUNDED])
def test_a_value_beyond_its_bound_is_refused_saying_why(key, spec):
    config = quickstart()
    parent = key.rsplit(".", 1)[0]
    if parent.endswith(".repetitions"):  # a key of precision on demand: the rest valid
        rule = {"min": 5, "max": 10, "target_half_width": 0.02, "until": "verdict"}
        set_key(config, parent, rule)
    if spec.get("type") == "array":  # a list longer than its bound
        set_key(config, key, list(range(1, spec["maxItems"] + 2)))
    elif key.endswith(".0"):  # a list's value beyond its bound
        too_big = spec["maximum"] * 10
        set_key(config, key.removesuffix(".0"), [int(too_big)])
    else:
        too_big = spec["maximum"] * 10 if spec["maximum"] >= 1 else spec["maximum"] + 1
        set_key(config, key, int(too_big) if spec.get("type") == "integer" else too_big)
    with pytest.raises(ConfigError) as err:
        check(config)
    first = str(err.value).splitlines()[0]
    assert first.startswith(f"config key `{key.replace('*', next(iter(config['variants'])))}`")
    assert spec["x-bound"] in first


def test_a_claim_given_as_a_percentage_is_called_one():
    config = quickstart()
    set_key(config, "comparison.claims.prefill", 81)
    with pytest.raises(ConfigError, match=r"almost certainly a percentage - write 0\.81"):
        check(config)


# ---- duplicate keys ------------------------------------------------------------------------


def test_a_key_given_twice_is_an_error_naming_the_file_and_lines(tmp_path):
    path = tmp_path / "my.yaml"
    path.write_text("experiment: a\nbench:\n  repetitions: 3\n  warmup: 1\n  repetitions: 30\n")
    with pytest.raises(ConfigError) as err:
        check_config_files([path])
    assert str(err.value) == (
        f"{path}, line 5: key `repetitions` given twice (first on line 3); "
        "YAML would silently keep the last"
    )


def test_every_shipped_config_has_unique_keys_and_merges_still_work():
    check_config_files(sorted((ROOT / "config").glob("*.yaml")))


def test_the_workflow_refuses_a_config_file_with_a_duplicate_key(tmp_path):
    from conftest import run_snakemake

    path = tmp_path / "dup.yaml"
    text = (ROOT / "config/config.yaml").read_text()
    path.write_text(text + "\nexperiment: other\n")
    proc = run_snakemake(ROOT, "-n", "--configfile", str(path), check=False)
    assert proc.returncode != 0
    assert "key `experiment` given twice" in proc.stdout + proc.stderr


# ---- reserved names ------------------------------------------------------------------------


def test_a_variant_named_like_the_aa_control_is_refused_naming_both():
    config = quickstart()
    baseline = config["comparison"]["baseline"]
    config["comparison"]["aa_control"] = True
    config["variants"][f"{baseline}-again"] = config["variants"][baseline]
    with pytest.raises(ConfigError) as err:
        check(config)
    first = str(err.value).splitlines()[0]
    assert first.startswith(f"config key `variants.{baseline}-again`: the name is taken")
    assert f"{baseline!r} again" in first


@pytest.mark.parametrize("name", ["engines", "models", "replay"])
def test_an_experiment_named_like_a_shared_results_directory_is_refused(name):
    config = quickstart()
    config["experiment"] = name
    with pytest.raises(ConfigError, match=rf"^config key `experiment`: '{name}' is the workflow"):
        check(config)


@pytest.mark.parametrize(
    "key, value",
    [
        ("models.m.modelscope.id", "../../etc"),
        ("models.m.modelscope.id", "MNN/.."),
        ("models.m.modelscope.revision", "master; rm -rf ~"),
        ("models.m.modelscope.revision", "../../x"),
        ("devices.phone.adb.serial", "R5CT1 && reboot"),
        ("devices.phone.adb.serial", "$(id)"),
        ("devices.phone.adb.server_host", "127.0.0.1 -a"),
    ],
)
def test_identifiers_that_a_path_or_a_shell_would_misread_are_refused(key, value):
    """An id or serial whose own grammar has no `..` part or shell character cannot carry
    one into a download path or an adb command."""
    config = quickstart()
    config["models"] = {"m": {"modelscope": {"id": "MNN/Qwen3-0.6B-MNN", "revision": "v1"}}}
    config["devices"] = {"phone": {"adb": {"serial": "emulator-5554"}}}
    check(config)  # the sane values pass
    set_key(config, key, value)
    with pytest.raises(ConfigError, match=f"config key `{re.escape(key)}`"):
        check(config)


def test_a_raw_record_holds_the_phases_the_analysis_knows_and_no_other(root):
    """The records schema's phase names are phases.ALL_PHASES (a phase the runner writes and
    the schema refuses, or one the schema lets through that no table knows, fails here)."""
    import yaml

    from mnnrepro.phases import ALL_PHASES

    schema = yaml.safe_load((root / "workflow" / "schemas" / "records.schema.yaml").read_text())
    result = schema["$defs"]["raw_record"]["properties"]["results"]["items"]
    assert tuple(result["properties"]["phase"]["enum"]) == ALL_PHASES
