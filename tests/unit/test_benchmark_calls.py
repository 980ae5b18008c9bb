"""The benchmark scripts' calls into the workflow's package bind to its signatures.

benchmarks/ runs by hand, not in the suite (each script is a long real run), so a package
function whose parameters change would break a script unseen until its next run, as
llamacpp_build_cost.py's call of build_engine once did. This reads each script's syntax tree
and binds every call of a package function or class, as written (the number of positional
arguments, the keyword names), to the signature the package has now."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from mnnrepro.plan.code import import_statements

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
MISSING = object()


def package_names(source: str) -> dict[str, object]:
    """What each name a script imports from the package (the statements the rerun triggers'
    scan finds) is bound to: a function, a class, a module."""
    names = {}
    for node in import_statements(source):
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, MISSING)
                if value is MISSING:
                    value = importlib.import_module(f"{node.module}.{alias.name}")
                names[alias.asname or alias.name] = value
    return names


def callee(func: ast.expr, names: dict[str, object]) -> object | None:
    """The package object a call's function expression names (`f(...)`, `module.f(...)`);
    MISSING for an attribute the module does not have; None for anything else."""
    if isinstance(func, ast.Name):
        return names.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner = names.get(func.value.id)
        if inspect.ismodule(owner):
            return getattr(owner, func.attr, MISSING)
    return None


def unbound_calls(source: str) -> list[str]:
    """Each call of a package function or class in `source` that its signature refuses."""
    names = package_names(source)
    found = []
    for node in ast.walk(ast.parse(source)):
        target = callee(node.func, names) if isinstance(node, ast.Call) else None
        if target is MISSING:
            found.append(f"line {node.lineno}: the package has no {ast.unparse(node.func)}")
        if target is None or target is MISSING or not callable(target):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            continue  # *args or **kwargs: the arguments are not known from the text
        try:
            inspect.signature(target).bind(*node.args, **{k.arg: k for k in node.keywords})
        except TypeError as err:
            found.append(f"line {node.lineno}: {ast.unparse(node.func)}(...): {err}")
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_call_of_the_package_binds_to_its_signature(script):
    assert unbound_calls(script.read_text()) == [], script.name


def test_a_call_the_signature_refuses_is_found():
    source = (
        "from mnnrepro.files import write_json\n"
        "from mnnrepro import stats\n"
        "write_json('a.json', {}, 'one too many')\n"
        "stats.no_such_function()\n"
        "write_json(path='a.json', data={})\n"
        "write_json(path='a.json', payload={})\n"
    )
    found = unbound_calls(source)
    assert [line.split(":")[0] for line in found] == ["line 3", "line 4", "line 5"], found
