"""What each conda env must hold: the import closure of its rules, and the env files made from it.

Each rule names a conda env (`conda:`) and a script (`script:`). A rule's import closure is
every module its script imports, followed through the workflow's own package (imports inside
functions included, and the package's programs that it starts with `sys.executable`), down to
the third-party distributions those imports come from and everything those distributions
require. An env is complete when it holds the closure of every rule that uses it.

    python envs/closure.py          # check every env against its rules (exit 1 on a gap)
    python envs/closure.py --write  # rewrite every env's pip part and locks/light.txt from
                                    # locks/py311.txt

The pip part of an env is a copy of the lock's lines for its distributions, hashes included, so
`conda env create` (which runs `pip install -r` on it) installs exactly what the lock pins.
Run it in the installed project (`bash install.sh`): distributions are read from the
installed metadata, the same versions the lock pins.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from mnnrepro.engines.registry import RUNNER
from mnnrepro.engines.registry import RUNNER_MODULES as KIND_RUNNER_MODULES
from mnnrepro.job import SHIM_HELPER as SHIM_SCRIPT

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "workflow" / "rules"
SCRIPTS = ROOT / "workflow" / "scripts"
PACKAGE = "mnnrepro"
# A rule's shim hands its job to the one shim-side module (workflow/scripts/job_spec.py), which
# runs mnnrepro.jobs.<the shim's name> by that name: both are in the rule's closure.
SHIM_HELPER = SCRIPTS / SHIM_SCRIPT
LOCK = ROOT / "locks" / "py311.txt"
ENV_PYTHON = "3.11"  # the envs' Python (python=3.11.7 in every env), so markers are read for it

# Provided in every script job by Snakemake itself: its preamble puts the running Snakemake's
# package on the job's path to unpickle the `snakemake` object. Nothing of ours imports it.
PROVIDED_BY_SNAKEMAKE = {"snakemake"}

# Distributions our code needs through another one's optional feature (an extra), which no
# metadata requirement reaches: distribution in the closure -> {what it needs: why}.
THROUGH_EXTRAS = {
    "altair": {"vl-convert-python": "altair's chart.save() to PNG (analysis/plots)"},
    "transformers": {"pillow": "image processors of vision models (the synthetic Qwen3-VL)"},
}

# Modules our programs import from a source tree the workflow fetches (not a distribution):
# llama.cpp's converter (`conversion`, convert_hf_to_gguf.py) and its gguf-py, run by
# engines/llamacpp/gguf_convert_main.py -> the distributions their code imports at the pinned
# commit.
FROM_FETCHED_TREES = {
    "conversion": {"torch", "transformers", "numpy", "safetensors", "sentencepiece", "requests"},
    "gguf": {"numpy", "pyyaml", "tqdm", "requests"},
}

# Modules the device-side runner imports from an engine's fetched wheels, staged on the device
# and put on its PYTHONPATH (ONNX Runtime GenAI: engines/ort_genai/fetch.py), never from the env ->
# the distributions they need from the device's Python.
FROM_FETCHED_TREES |= {"onnxruntime": {"numpy"}, "onnxruntime_genai": {"numpy"}}
# ... and genai's model builder in those wheels (engines/ort_genai/onnx_builder_main.py runs
# it), which imports these at onnxruntime-genai 0.18.0.
FROM_FETCHED_TREES |= {
    "builder": {"onnx-ir", "onnx", "torch", "transformers", "onnxruntime", "numpy", "safetensors"}
}

# The installer itself.
INSTALLER_OWNED = {"pip"}  # pinned in the conda part of every env


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Rule:
    name: str
    smk: str
    env: str | None  # env file name, e.g. "analysis.yaml"
    script: Path | None


def rules() -> list[Rule]:
    """Every rule of workflow/rules/*.smk with its env and script."""
    pattern = re.compile(r"^(?:rule|checkpoint) (\w+):\n((?:[ \t]+.*\n|\n)*)", re.M)
    found = []
    for smk in sorted(RULES.glob("*.smk")):
        for name, body in pattern.findall(smk.read_text()):
            env = re.search(r'conda:\s*\n\s*"([^"]+)"', body)
            script = re.search(r'script:\s*\n\s*"([^"]+)"', body)
            found.append(
                Rule(
                    name=name,
                    smk=smk.name,
                    env=Path(env.group(1)).name if env else None,
                    script=(RULES / script.group(1)).resolve() if script else None,
                )
            )
    return found


def module_file(module: str) -> Path | None:
    """The file of one of our modules (a package's __init__.py), or None if not ours."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = SCRIPTS.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_of(path: Path) -> str:
    rel = path.relative_to(SCRIPTS).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


DYNAMIC_IMPORTS = {"import_module", "find_spec", "__import__"}


def imports_of(path: Path) -> tuple[set[str], set[Path], set[str]]:
    """(every module name `path` imports anywhere in its code, the package's programs it starts,
    the modules it only looks up by name).

    Imports by name (`importlib.import_module("x")`, `find_spec("x")`) count. A program is a
    sibling .py file named in a string (`Path(__file__).with_name("x.py")`), run with
    `sys.executable`: what it imports runs in the same env.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    programs: set[Path] = set()
    by_name: set[str] = set()
    package = module_of(path).rpartition(".")[0] if path.is_relative_to(SCRIPTS) else ""
    if path.name == "__init__.py" and path.is_relative_to(SCRIPTS):
        package = module_of(path)
    if path.parent == SCRIPTS and path != SHIM_HELPER:  # a rule's shim: its job's module
        names.add(f"{PACKAGE}.jobs.{path.stem}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)  # maybe submodules
        elif (  # importlib.import_module("x"), importlib.util.find_spec("x")
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in DYNAMIC_IMPORTS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
            by_name.add(node.args[0].value)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.fullmatch(r"\w+\.py", node.value)
            and (path.parent / node.value).is_file()
            and (path.parent / node.value) not in STAGED_PROGRAMS
        ):
            programs.add(path.parent / node.value)
    return names, programs, by_name


@dataclass
class Closure:
    modules: set[str] = field(default_factory=set)  # our modules
    third_party: set[str] = field(default_factory=set)  # top-level import names
    by_name: set[str] = field(default_factory=set)  # of those, the ones only looked up by name
    distributions: set[str] = field(default_factory=set)  # normalised distribution names
    unknown: set[str] = field(default_factory=set)  # imported names no distribution provides


def stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names or name == "__future__"


# The device-side Python runner and the modules it imports by their bare names from its own
# directory, where they are staged beside it: the engine kinds declare them (engines/registry).
# The device's Python runs them; on this host that is the env of the rules that stage them
# (runs/staging.py), so they count there, not wherever a kind names its files.
RUNNER_MODULES = {name.removesuffix(".py"): path for name, path in KIND_RUNNER_MODULES.items()}
STAGED_PROGRAMS = {RUNNER, *KIND_RUNNER_MODULES.values()}
STAGING = SCRIPTS / PACKAGE / "runs" / "staging.py"


def sibling_module(path: Path | None, top: str) -> Path | None:
    """A runner module (RUNNER_MODULES) that a program of the package imports from its own
    directory on the device: ours, followed like the package's modules."""
    if path is None or top not in RUNNER_MODULES or not path.is_relative_to(SCRIPTS / PACKAGE):
        return None
    return RUNNER_MODULES[top]


def closure_of(scripts: list[Path], names_imported: set[str] = frozenset()) -> Closure:
    """The import closure of these scripts (and everything they start), and of modules that
    something else imports (`names_imported`)."""
    result = Closure()
    todo: list[Path | None] = [None, *scripts]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        if path is None:  # the names given
            names, programs, by_name = set(names_imported), set(), set()
        else:
            seen.add(path)
            names, programs, by_name = imports_of(path)
            programs |= {RUNNER} if path == STAGING else set()
        result.by_name.update(n for n in by_name if n.split(".")[0] != PACKAGE)
        todo.extend(programs)
        result.modules.update(module_of(program) for program in programs)
        for name in names:
            top = name.split(".")[0]
            if top == PACKAGE:
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # a module imports every package above it
                    file = module_file(".".join(parts[:i]))
                    if file is not None:
                        result.modules.add(module_of(file))
                        todo.append(file)
            elif top == SHIM_HELPER.stem:
                todo.append(SHIM_HELPER)
            elif sibling := sibling_module(path, top):  # a staged program's module beside it
                result.modules.add(module_of(sibling))
                todo.append(sibling)
            elif top and not stdlib(top) and top not in PROVIDED_BY_SNAKEMAKE:
                result.third_party.add(top)
    providers = metadata.packages_distributions()
    for top in result.third_party:
        if top in FROM_FETCHED_TREES:
            result.distributions.update(FROM_FETCHED_TREES[top])
            continue
        dists = providers.get(top)
        if not dists:
            result.unknown.add(top)
            continue
        result.distributions.update(normal(d) for d in dists)
    result.distributions = requirement_closure(result.distributions)
    return result


def requirement_closure(names: set[str]) -> set[str]:
    """The distributions and everything they require, for the envs' Python: no extras, but
    the distributions THROUGH_EXTRAS says our code needs through one."""
    environment = {**default_environment(), "python_version": ENV_PYTHON, "extra": ""}
    done: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        todo.extend(THROUGH_EXTRAS.get(name, {}))
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(environment):
                todo.append(normal(req.name))
    return done - INSTALLER_OWNED


def workflow_imports() -> set[str]:
    """What Snakemake imports to read the workflow: the import lines of Snakefile and rules."""
    pattern = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)
    names = set()
    for path in [ROOT / "Snakefile", *sorted(RULES.glob("*.smk"))]:
        names.update(a or b for a, b in pattern.findall(path.read_text()))
    return names


def light_closure() -> Closure:
    """The light install (locks/light.txt): Snakemake, reading the workflow, and the rules of a
    replay (restore_archive and the analysis env's rules: tables, statistics, plots, report)."""
    scripts = [rule.script for rule in env_rules()["analysis.yaml"]]
    needed = closure_of(scripts, workflow_imports())
    # the workflow's own package is installed editable, without build isolation: its build
    # backend (pyproject's build-system) must be in the lock too
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    backend = {normal(Requirement(r).name) for r in build}
    needed.distributions = requirement_closure(needed.distributions | {"snakemake"} | backend)
    return needed


def env_rules() -> dict[str, list[Rule]]:
    """env file name -> the rules that run in it."""
    by_env: dict[str, list[Rule]] = {}
    for rule in rules():
        if rule.env and rule.script:
            by_env.setdefault(rule.env, []).append(rule)
    return by_env


def env_closure(env: str) -> Closure:
    return closure_of([rule.script for rule in env_rules()[env]])


# ---- env files -----------------------------------------------------------------------------


def lock_blocks(lock: Path = LOCK) -> dict[str, list[str]]:
    """name -> the lock's lines for it (requirement and --hash lines, comments dropped)."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in lock.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", line)
        if match:
            current = normal(match.group(1))
            blocks[current] = [line]
        elif current and line.strip().startswith("--hash="):
            blocks[current].append(line)
        else:
            current = None
    return blocks


def pip_lines(distributions: set[str], lock: Path = LOCK) -> list[str]:
    """One `name==version --hash=... --hash=...` requirement per distribution, from the lock."""
    blocks = lock_blocks(lock)
    missing = sorted(distributions - blocks.keys())
    if missing:
        raise SystemExit(f"{lock.name} lacks {', '.join(missing)}: re-make the lock")
    lines = []
    for name in sorted(distributions):
        requirement = blocks[name][0].rstrip(" \\")
        hashes = [h.strip().rstrip(" \\") for h in blocks[name][1:]]
        lines.append(" ".join([requirement, *hashes]))
    return lines


PIP_START = "  - pip:\n"


def env_pip_part(text: str) -> list[str]:
    """The pip requirements of an env file's text (options such as --extra-index-url kept)."""
    if PIP_START not in text:
        return []
    part = text.split(PIP_START, 1)[1]
    return [m.group(1) for m in re.finditer(r'^      - "?(.+?)"?$', part, re.M)]


def write_env(env: str, closure: Closure) -> bool:
    """Rewrite the pip part of envs/<env> from the lock; True if it changed."""
    path = ROOT / "envs" / env
    text = path.read_text()
    head = text.split(PIP_START, 1)[0]
    lines = pip_lines(closure.distributions)
    options = []
    if any(line.startswith("torch==") and "+cpu" in line.split()[0] for line in lines):
        options.append("--extra-index-url https://download.pytorch.org/whl/cpu")
    body = "".join(f'      - "{line}"\n' for line in [*options, *lines])
    new = head + PIP_START + body if lines else head
    if new != text:
        path.write_text(new)
        return True
    return False


def gaps(env: str, closure: Closure) -> list[str]:
    """What the env lacks for its rules, one line each."""
    text = (ROOT / "envs" / env).read_text()
    pinned = {normal(line.split("==")[0]) for line in env_pip_part(text) if "==" in line}
    problems = [f"envs/{env}: no distribution provides `import {m}`" for m in closure.unknown]
    for dist in sorted(closure.distributions - pinned):
        users = [r.name for r in env_rules()[env] if dist in closure_of([r.script]).distributions]
        problems.append(f"envs/{env} lacks {dist} (needed by {', '.join(users)})")
    return problems


LIGHT_LOCK = ROOT / "locks" / "light.txt"
LIGHT_HEADER = """\
# The light install (`bash install.sh --light`): replay a results archive, re-derive tables,
# statistics, verdicts, plots and the report; no torch, transformers, MNN engine or adb.
# Written by `python envs/closure.py --write` from locks/py311.txt (same versions, same hashes,
# every file of each release, so it serves Python 3.11, 3.12 and 3.13 alike).
"""


def light_lock_text() -> str:
    blocks = lock_blocks()
    needed = light_closure()
    if needed.unknown:
        raise SystemExit(f"no installed distribution provides {sorted(needed.unknown)}")
    body = []
    for name in sorted(needed.distributions):
        body.append("\n".join(blocks[name]))
    return LIGHT_HEADER + "\n".join(body) + "\n"


def main(argv: list[str]) -> int:
    write = "--write" in argv
    problems = []
    for env in sorted(env_rules()):
        closure = env_closure(env)
        if closure.unknown:  # not installed here: nothing to write from
            raise SystemExit(
                f"envs/{env}: no installed distribution provides "
                f"{', '.join(sorted(closure.unknown))}; run it after install.sh"
            )
        if write and write_env(env, closure):
            print(f"rewrote envs/{env}: {len(closure.distributions)} distributions")
        problems += gaps(env, closure)
    light = light_lock_text()
    if write and (not LIGHT_LOCK.is_file() or LIGHT_LOCK.read_text() != light):
        LIGHT_LOCK.write_text(light)
        print(f"rewrote {LIGHT_LOCK.relative_to(ROOT)}")
    elif LIGHT_LOCK.read_text() != light:
        problems.append(f"{LIGHT_LOCK.relative_to(ROOT)} is stale: python envs/closure.py --write")
    print("\n".join(problems) or "every env holds the import closure of its rules")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
