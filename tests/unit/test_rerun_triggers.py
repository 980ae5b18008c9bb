"""What makes Snakemake rerun a rule beyond its own files: package code and the engine runner."""

from __future__ import annotations

from conftest import snakemake_rules

from mnnrepro.files import code_digest

ANALYSIS = {
    "check_validity",
    "collect_bench_table",
    "compute_summary",
    "collect_sweep_table",
    "compute_sweep_summary",
    "explain_gain",
    "describe_model_layout",
    "plot",
    "write_summary_report",
    "check_emulation",
}
DEVICE_RUNS = {"push_to_device", "run_greedy", "run_bench", "run_sweep"}


def rule_bodies(root) -> dict[str, str]:
    """Rule name -> its text, with the shared `**NAME = dict(...)` dicts of the rule files
    spelled out (other `**NAME`s, such as the plan's ARCHIVED_RECORDS, are paths: kept)."""
    import re

    text = "".join(p.read_text() for p in sorted((root / "workflow/rules").glob("*.smk")))
    shared = dict(re.findall(r"^([A-Z_]+) = dict\(\n((?:    .*\n)*)\)", text, re.M))

    def spelled_out(body: str) -> str:
        return re.sub(r"\*\*([A-Z_]+),", lambda m: shared.get(m.group(1), m.group(0)), body)

    return {name: spelled_out(body) for _, name, body in snakemake_rules(root)}


def test_code_digest_follows_names_and_contents(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    first = code_digest(tmp_path)
    assert code_digest(tmp_path) == first
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_digest(tmp_path) != first
    (tmp_path / "a.py").rename(tmp_path / "b.py")
    assert code_digest(tmp_path) != first


def test_analysis_reruns_on_package_changes_and_device_runs_on_runner_changes(root):
    """Each analysis rule's `code` is the digest of its own script's closure; the device runs
    take the runner instead, and no code digest (a code edit never re-measures)."""
    import re

    bodies = rule_bodies(root)
    for name in ANALYSIS:
        script = re.search(r'script:\s+"\.\./scripts/(\w+\.py)"', bodies[name]).group(1)
        assert f'code=PLAN.code_of("{script}")' in bodies[name], name
    for name in DEVICE_RUNS:
        assert "runner=PLAN.engine_runner" in bodies[name], name
    for name in DEVICE_RUNS | {"export_mnn_model", "build_engine", "measure_bandwidth"}:
        assert "code_of" not in bodies[name], f"{name} would re-measure on a code edit"


def test_an_edit_reruns_the_analysis_jobs_that_reach_it_and_no_other(root, tmp_path):
    """On a copy of the scripts: editing the statistics changes the summary's and the
    mechanism's code digests; editing the adb device changes neither (it reran every analysis
    job when the whole package was hashed)."""
    import shutil

    from mnnrepro.plan.code import closure, code_of, imported_files

    scripts = tmp_path / "scripts"
    shutil.copytree(root / "workflow" / "scripts", scripts)
    jobs = ("compute_summary.py", "explain_gain.py", "plot.py")
    before = {job: code_of(scripts / job, scripts) for job in jobs}
    reached = closure(scripts / "compute_summary.py", scripts)
    assert scripts / "mnnrepro/stats.py" in reached
    assert scripts / "mnnrepro/devices/adb.py" not in reached
    code_of.cache_clear(), imported_files.cache_clear()  # a new Snakemake process
    with open(scripts / "mnnrepro/devices/adb.py", "a") as fh:
        fh.write("\n# an edit\n")
    assert {job: code_of(scripts / job, scripts) for job in jobs} == before
    code_of.cache_clear(), imported_files.cache_clear()  # a new Snakemake process
    with open(scripts / "mnnrepro/stats.py", "a") as fh:
        fh.write("\n# an edit\n")
    after = {job: code_of(scripts / job, scripts) for job in jobs}
    assert after["compute_summary.py"] != before["compute_summary.py"]
    assert after["explain_gain.py"] != before["explain_gain.py"]


def package_imports_parsed_whole(text: str) -> list[str]:
    """The package's imports of a module, from its whole syntax tree (the reference)."""
    import ast

    return sorted(
        ast.unparse(node)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ImportFrom | ast.Import)
        and any(
            name.split(".")[0] == "mnnrepro"
            for name in [getattr(node, "module", None) or "", *(a.name for a in node.names)]
        )
        and not (isinstance(node, ast.ImportFrom) and node.level)
    )


def test_the_import_scan_finds_what_the_whole_syntax_tree_holds(root, tmp_path):
    """code_of reads only the lines that import the package; for every script and module of
    the workflow, and for the forms a module may use (inside a function, over several lines,
    `as`, a look-alike line in a docstring), it finds the imports a whole parse finds."""
    import ast

    from mnnrepro.plan.code import import_statements

    forms = (
        '"""Docstring.\n\n    from mnnrepro import the rest, as prose\n"""\n'
        "import os\nimport mnnrepro.stats as stats\n"
        "from mnnrepro.files import (\n    code_digest,  # a comment\n    write_json,\n)\n"
        "def f():\n    from mnnrepro.devices import adb\n    return adb\n"
    )
    modules = sorted((root / "workflow" / "scripts").rglob("*.py"))
    for text in [forms, *(p.read_text() for p in modules)]:
        scanned = sorted(ast.unparse(node) for node in import_statements(text))
        assert scanned == package_imports_parsed_whole(text)
    assert len(package_imports_parsed_whole(forms)) == 3
