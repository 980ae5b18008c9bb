"""config/README.md, generated: the shipped experiments and the config's sections, from the
schema (PYTHONPATH=workflow/scripts python -m mnnrepro.plan.catalog > config/README.md)."""

from __future__ import annotations

from pathlib import Path

from mnnrepro.config import SCHEMA_PATH, load_schema


def first_sentence(path: Path) -> str:
    """The first sentence of a config file's opening comment."""
    block = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#") or not line.strip("# "):
            break
        block.append(line.lstrip("# ").strip())
    text = " ".join(block)
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def catalog(schema: dict, config_dir: Path) -> str:
    """config/README.md: the shipped experiments (each file's first comment line) and the
    config's sections, from the schema (tests/unit/test_config.py keeps the two equal)."""
    lines = [
        "# Experiments (configs)",
        "",
        "<!-- generated from workflow/schemas/config.schema.yaml and the files here: "
        "PYTHONPATH=workflow/scripts python -m mnnrepro.plan.catalog > config/README.md -->",
        "",
        "Every key, its type, default and meaning is in `workflow/schemas/config.schema.yaml`;",
        "a config is checked against it (and cross-checked) before any job runs. Run one with",
        "`snakemake --cores 4 --configfile config/<file>` (it replaces the default,",
        "`config.yaml`).",
        "",
        "| file | what it holds |",
        "|---|---|",
    ]
    for path in sorted(config_dir.glob("*.yaml")):
        lines.append(f"| `{path.name}` | {first_sentence(path)} |")
    lines += ["", "| section | what it holds |", "|---|---|"]
    defs = schema["$defs"]
    for key, spec in schema["properties"].items():
        ref = spec.get("$ref", "").rsplit("/", 1)[-1]
        about = spec.get("description") or defs.get(ref, {}).get("description", "")
        required = " (required)" if key in schema.get("required", []) else ""
        lines.append(f"| `{key}`{required} | {' '.join(about.split())} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(catalog(load_schema(), SCHEMA_PATH.parents[2] / "config"), end="")
