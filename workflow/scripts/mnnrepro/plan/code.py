"""What an analysis job's output depends on in this workflow's own code: its script and every
module of the package the script imports, followed through the package (imports inside
functions included), hashed by name and content. An edit reruns the jobs whose scripts reach
the edited module, and no other (Snakemake itself tracks only the script file)."""

from __future__ import annotations

import ast
import hashlib
import re
from functools import cache
from pathlib import Path

from mnnrepro.files import code_digest
from mnnrepro.job import SHIM_HELPER

PACKAGE = "mnnrepro"
# a line that starts an import of the package, at any indentation (inside a function too),
# with its parenthesized names over several lines: parsing these alone, not whole modules,
# takes 0.2 CPU-s off every Snakemake start (which hashes 13 scripts' closures)
PACKAGE_IMPORT = re.compile(
    rf"^[ \t]*(from[ \t]+{PACKAGE}\b[\w.]*[ \t]+import[ \t]+(?:\([^)]*\)|.*)"
    rf"|import[ \t]+{PACKAGE}\b.*)",
    re.M,
)


def import_statements(text: str) -> list[ast.stmt]:
    """The package's import statements in a module's text; a line that only looks like one
    (in a docstring, say) and does not parse is not an import."""
    statements = []
    for line in PACKAGE_IMPORT.findall(text):
        try:
            statements += ast.parse(line.strip()).body
        except SyntaxError:
            continue
    return statements


@cache
def imported_files(path: Path, scripts: Path) -> frozenset[Path]:
    """The package's files that importing what `path` imports runs (each module, and the
    __init__ of every package on its way). A rule's shim reaches the shim-side helper and its
    job's code, mnnrepro/jobs/<the shim's name>, which the helper runs by that name."""
    names, files = set(), set()
    if path.parent == scripts and path.name != SHIM_HELPER:
        names.add(f"{PACKAGE}.jobs.{path.stem}")
        files.add(scripts / SHIM_HELPER)
    for node in import_statements(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
    for name in names:
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            base = scripts.joinpath(*parts[:depth])
            files |= {f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()}
    return frozenset(files)


def closure(script: Path, scripts: Path) -> list[Path]:
    """The script and every package file it reaches, in a stable order."""
    seen, todo = set(), [script]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo.extend(imported_files(path, scripts) - seen)
    return sorted(seen)


@cache
def code_of(script: Path, scripts: Path) -> str:
    """sha256 over the names (relative to `scripts`) and contents of the script's closure."""
    digest = hashlib.sha256()
    for path in closure(script, scripts):
        digest.update(path.relative_to(scripts).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def tool_digests(gate_tools: tuple[Path, ...], shared: Path, probe: Path) -> tuple[str, str]:
    """The sources of the gate tools (each kind's folder, and the code they share) and of the
    bandwidth probe, each hashed: an edit of one rebuilds it, not the engines."""
    gate_code = "".join(
        code_digest(folder, ("*.cpp", "*.hpp", "*.h", "*.txt")) for folder in (*gate_tools, shared)
    )
    return gate_code, code_digest(probe, ("*.c", "*.txt"))
