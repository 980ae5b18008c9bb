"""The package's layout: sub-packages per stage, and no import cycle between modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "workflow" / "scripts" / "mnnrepro"
STAGES = {
    *("toolchain", "models", "devices", "engines", "runs", "analysis", "archive", "store"),
    *("plan", "jobs"),
}


def module_name(path: Path) -> str:
    return ".".join(("mnnrepro", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
        ".__init__"
    )


def imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports (lazy imports inside functions included)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mnnrepro"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    is_module = PACKAGE.joinpath(*full.split(".")[1:]).with_suffix(".py").exists()
                    deps.add(full if is_module else node.module)
        graph[module_name(path)] = deps
    return graph


def test_no_import_cycle():
    graph, state, cycles = imports(), {}, []

    def visit(module, stack):
        state[module] = "open"
        for dep in graph.get(module, ()):
            if state.get(dep) == "open":
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[module] = "done"

    for module in graph:
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_every_module_belongs_to_a_stage_or_is_shared():
    top_level = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    # used by every stage: config, job logs, file I/O, error types, verified reading of records,
    # the statistics (the runs' stopping rule and the analysis compute the same CIs), the
    # sweep's points (the rules plan them, the runs measure them, the analysis reads them),
    # the repetitions' one type (the plan, the runs and the analysis read it), the design the
    # plan hands the gate, the runs and the analysis, pinned downloads and the one safe
    # extraction, where an interval lies against a boundary (every verdict and the stopping
    # rule judge by it), the phases' names (the runs time them, the analysis tables them), the
    # sequential design's calibration (the stopping rule's looks, the summary's adjusted gain),
    # a job's spec (every rule's job is handed one, mnnrepro/jobs/ runs them), the config's
    # `bench` and `stats` as types (the plan builds them, the runs and the analysis read them)
    assert top_level == {
        *("config", "logs", "files", "errors", "records", "stats", "intervals", "sweep_plan"),
        "sequential",
        *("assumptions", "repetitions", "design", "sides", "phases"),
        *("fetch", "unpack"),
        *("job", "sections"),
    }
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} == STAGES
    for stage in STAGES:
        assert (PACKAGE / stage / "__init__.py").read_text().startswith('"""'), stage


# The stages, bottom up: a module imports the ground floor (top-level modules), its own stage
# and stages below it, never one above (a device does not know how runs use it; a run's
# stopping rule does not import the analysis).
LAYERS = [
    {"toolchain", "models"},
    {"devices"},
    {"engines"},
    {"runs"},
    {"analysis"},
    {"archive"},
    {"store"},
    {"plan"},
    {"jobs"},  # each rule's job: what its shim hands on (mnnrepro/job.py runs them by name)
]


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else None  # None: the ground floor


def test_no_stage_imports_a_stage_above_it():
    level = {stage: i for i, stages in enumerate(LAYERS) for stage in stages}
    assert set(level) == STAGES

    def above(module: str, dep: str) -> bool:
        here, there = stage_of(module), stage_of(dep)
        if there is None:
            return False  # the ground floor: everyone may import it
        return here is None or level[there] > level[here]

    upward = [(m, d) for m, deps in imports().items() for d in deps if above(m, d)]
    assert upward == []


def test_the_longest_first_order_names_test_modules_that_exist(root):
    """A renamed or removed module would drop out of the order silently (and start last)."""
    from conftest import LONGEST_FIRST

    missing = [path for path in LONGEST_FIRST if not (root / path).is_file()]
    assert missing == [] and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


RULES = PACKAGE.parents[1] / "rules"


def python_of(smk: str) -> str:
    """A rule file's Python: its Snakemake directive blocks (`name:` and their indented lines)
    dropped."""
    kept, skipping = [], False
    for line in smk.splitlines():
        if re.match(r"(rule|checkpoint|localrules|wildcard_constraints|include|report)\b", line):
            skipping = True
            continue
        if skipping and (not line.strip() or line.startswith((" ", "\t"))):
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept)


def test_the_rules_read_the_plan_not_the_config():
    """The config is read once, by common.smk's plan_of_this_run; every rule reads PLAN (its
    names, settings and input functions), and common.smk exports PLAN, not aliases of it."""
    for path in sorted(RULES.glob("*.smk")):
        code = re.sub(r"#.*", "", path.read_text())
        if path.name == "common.smk":
            builder = code.split("def plan_of_this_run", 1)[1].split("\nPLAN = ", 1)[0]
            code = code.replace(builder, "")
        assert not re.search(r"(?<![\w.])config(?![\w=])", code), f"{path.name} reads the config"
    tree = ast.parse(python_of((RULES / "common.smk").read_text()))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    assert "PLAN" in names and len(names) <= 10, sorted(names)


def test_the_readme_is_a_first_screen_and_pointers():
    """README: what it is, the quickstart, three ways in and where everything else lives (at
    most 10 KB); each measured figure has one home, in docs/ or a results file."""
    readme = PACKAGE.parents[2] / "README.md"
    assert len(readme.read_bytes()) <= 10_000


MAX_MODULE_LINES, MAX_FUNCTION_LINES = 350, 50


def too_long(paths) -> tuple[list[str], list[str]]:
    """(the functions over MAX_FUNCTION_LINES, the modules over MAX_MODULE_LINES)."""
    long_functions, long_modules = [], []
    for path in sorted(paths):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.append(path.name)
        long_functions += [
            f"{path.name}:{node.name}"
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
        ]
    return long_functions, long_modules


def test_functions_and_modules_stay_short(tmp_path):
    """No function over 50 lines and no module over 350 in workflow/scripts: a longer one is
    split by what it does, not trimmed to fit. The check finds one line too many of each."""
    assert too_long(PACKAGE.parent.rglob("*.py")) == ([], [])
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (tmp_path / "f.py").write_text(f"def f():\n{body}    return 0\n")
    (tmp_path / "m.py").write_text("x = 0\n" * (MAX_MODULE_LINES + 1))
    assert too_long(tmp_path.iterdir()) == (["f.py:f"], ["m.py"])


MAX_FMT_SKIPS = 10  # `# fmt: skip` only on tables of data, which ruff would spread out
FMT_SKIP = "# fmt" + ": skip"  # spelled apart: this file holds none


def fmt_skips(paths) -> list[str]:
    """Every line that keeps the formatter off."""
    return [
        f"{path.name}:{number}"
        for path in sorted(paths)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.rstrip().endswith(FMT_SKIP)
    ]


def test_the_formatter_formats_nearly_everything(tmp_path):
    """At most MAX_FMT_SKIPS lines of the project's Python keep ruff's formatter off; the
    check counts one over the limit."""
    root = PACKAGE.parents[2]
    python = [
        p for d in ("workflow", "tests", "benchmarks", "envs") for p in (root / d).rglob("*.py")
    ]
    assert len(fmt_skips(python)) <= MAX_FMT_SKIPS, fmt_skips(python)
    (tmp_path / "t.py").write_text(f"x = (1,)  {FMT_SKIP}\n" * (MAX_FMT_SKIPS + 1))
    assert len(fmt_skips([tmp_path / "t.py"])) == MAX_FMT_SKIPS + 1


def unexplained_inner_imports(paths) -> list[str]:
    """Every import inside a function without a comment, on its line or heading the run of
    imports it stands in, that says why it is not at the module's top."""
    found = []
    for path in sorted(paths):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        inner = [
            sub
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for sub in ast.walk(node)
            if isinstance(sub, (ast.Import, ast.ImportFrom))
        ]
        spans = {n for sub in inner for n in range(sub.lineno, sub.end_lineno + 1)}
        for n in sorted({sub.lineno for sub in inner}):
            above = n - 1
            while above in spans:  # up the run of imports (1-based line numbers)
                above -= 1
            if "#" not in lines[n - 1] and not lines[above - 1].strip().startswith("#"):
                found.append(f"{path.name}:{n}: {lines[n - 1].strip()}")
    return found


def test_imports_are_at_the_top_or_say_why(tmp_path):
    """An import inside a function is a heavy or optional one (torch, pandas, scipy, a module
    staged beside the device-side runner) and says so; the check finds one that does not."""
    assert unexplained_inner_imports(PACKAGE.parent.rglob("*.py")) == []
    (tmp_path / "m.py").write_text(
        "def f():\n    import json\n\n    return json\n\n\n"
        "def g():\n    import math  # here: a reason\n\n    return math\n\n\n"
        "def h():\n    # here: a reason for both\n    import os\n    import sys\n\n"
        "    return os, sys\n"
    )
    assert unexplained_inner_imports([tmp_path / "m.py"]) == ["m.py:2: import json"]


SNAKEMAKE_OBJECT = re.compile(
    r"\bsnakemake\.(input|output|log|params|wildcards|threads|rule|scriptdir)\b"
)


def test_job_scripts_are_shims():
    """A rule's script hands Snakemake's object to workflow/scripts/job_spec.py, the one file
    that reads it, naming its job's code, mnnrepro/jobs/<its name>.py; the package reads only
    the job's spec (mnnrepro/job.py), so that a job reruns from that file alone."""
    shims = sorted(set(PACKAGE.parent.glob("*.py")) - {PACKAGE.parent / "job_spec.py"})
    for path in shims:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0] == "from job_spec import run_job", path.name
        assert lines[2].startswith(f'run_job(snakemake, "{path.stem}")'), path.name
        assert len(lines) == 3, path.name
    assert {p.stem for p in shims} == {p.stem for p in (PACKAGE / "jobs").glob("*.py")} - {
        "__init__"
    }
    package = [p for p in PACKAGE.rglob("*.py") if SNAKEMAKE_OBJECT.search(p.read_text())]
    assert package == []
