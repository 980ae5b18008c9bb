"""An experiment config: loading (YAML that refuses a key given twice), the schema check with
the project's messages, and what every stage derives from it the same way (runtime defaults,
the compared pairs, the A/A control's variant, the variants a device runs, canonical params).
The cross-references and the kinds' checks are plan/checks.py's, sweep points sweep_plan.py's,
the generated config/README.md plan/catalog.py's."""

from __future__ import annotations

import copy
import difflib
import functools
import os
import re
from pathlib import Path
from posixpath import normpath

import jsonschema
import yaml

from mnnrepro.errors import ReproError
from mnnrepro.files import where_run

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"


class ConfigError(ReproError, ValueError):
    """A config problem, worded for the user: it names the key and what is allowed."""


def use_this_package(scripts_dir: str | Path) -> None:
    """Make every job's Python import this workflow's own copy of the package, even where
    another checkout of it is installed (pip install -e): PYTHONPATH comes before
    site-packages."""
    current = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(scripts_dir), *filter(None, [current])])


def refuse(problems: list[str]) -> None:
    """Raise one ConfigError listing every problem, one per line; the first line is the first
    problem itself (it names its key)."""
    more = f"\n  ({len(problems) - 1} more:)\n  " if len(problems) > 1 else ""
    raise ConfigError(problems[0] + more + "\n  ".join(problems[1:]))


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue  # `<<: *anchor` merges may be overridden by explicit keys
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(
                    f"{key_node.start_mark.name}, line {line}: key `{key}` given twice "
                    f"(first on line {seen[key]}); YAML would silently keep the last"
                )
            seen[key] = line
        return super().construct_mapping(node, deep)


def load_yaml(text: str | bytes, name: str):
    """Parse the YAML text of file `name`, refusing a duplicate key; errors name the file."""
    loader = _UniqueKeyLoader(text)
    loader.name = name  # marks (and so errors) name the file
    try:
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise ConfigError(f"{name}: not valid YAML ({' '.join(str(err).split())})") from None
    finally:
        loader.dispose()


KEY_NAMED = re.compile(r"^config key `([^`]+)`")
FULL_COMMIT = re.compile(r"[0-9a-f]{40}")


def is_full_commit(value) -> bool:
    """A pin that names one git commit (40 hex digits): a tag or a branch name moves."""
    return bool(FULL_COMMIT.fullmatch(str(value)))


def naming_its_file(err: ConfigError, paths) -> ConfigError:
    """The error with the config file that gives its key in front (the last of `paths` that
    does, as Snakemake merges them in order); as it is where no file gives it (a default, or
    `--config`)."""
    found = KEY_NAMED.match(str(err))
    key = found.group(1).split(".") if found else []
    for path in reversed(list(paths)):
        node = load_yaml(Path(path).read_text(encoding="utf-8"), str(path))
        for part in key:
            node = node.get(part) if isinstance(node, dict) else None
        if key and node is not None:
            return ConfigError(f"{path}: {err}")
    return err


def check_config_files(paths) -> None:
    """Every config file given must be YAML without a duplicate key (Snakemake's own loader
    keeps the last of two, silently)."""
    for path in paths:
        load_yaml(Path(path).read_text(encoding="utf-8"), str(path))


# libyaml's parser where PyYAML has it (its wheels do): the schema is about 42 KB of YAML, and
# the pure-Python parser took 0.4 s a read
_FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _parsed_schema(path: Path, mtime_ns: int) -> dict:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_FAST_SAFE_LOADER)


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    """The config schema, parsed once per process and file version (a dry run asked for it five
    times: 2.1 of its 5.9 s); each caller gets its own copy to change."""
    return copy.deepcopy(_parsed_schema(Path(path), Path(path).stat().st_mtime_ns))


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def near_miss(name: str, allowed) -> str | None:
    """The allowed key `name` was most likely meant to be (a typo), if any."""
    close = difflib.get_close_matches(name, list(allowed), n=1, cutoff=0.75)
    return close[0] if close else None


def unknown_key(path: list[str], allowed: list[str]) -> str:
    *parent, name = path
    meant = near_miss(name, allowed)
    if meant:
        return f"config key `{_key(path)}`: unknown key; did you mean `{_key([*parent, meant])}`?"
    return f"config key `{_key(path)}`: unknown key; allowed here: {allowed}"


def _derived(error: jsonschema.ValidationError, errors) -> bool:
    """A required key reported missing because it was misspelled: the misspelling's own
    error (unknown key, did you mean ...) says it all."""
    if error.validator != "required":
        return False
    missing = error.message.split("'")[1] if "'" in error.message else ""
    return any(
        other.validator == "additionalProperties"
        and list(other.absolute_path) == list(error.absolute_path)
        and any(near_miss(n, [missing]) for n in set(other.instance) - {missing})
        for other in errors
    )


def _explain(error: jsonschema.ValidationError) -> str:
    where = _key(error.absolute_path)
    validator = error.validator
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return "\n".join(
            unknown_key([*map(str, error.absolute_path), name], allowed)
            for name in sorted(set(error.instance) - set(allowed))
        )
    if validator == "required":
        return f"config key `{where}`: {error.message}"
    if validator == "enum":
        return f"config key `{where}`: {error.instance!r} is not one of {error.validator_value}"
    if validator == "pattern":
        return (
            f"config key `{where}`: {error.instance!r} must match {error.validator_value} "
            "(lower-case letters, digits, inner hyphens)"
        )
    if validator == "propertyNames":
        return f"config key `{where}`: names must be lower-case slugs ([a-z0-9][a-z0-9-]*)"
    if validator == "oneOf":
        options = [sorted(s.get("required", [])) for s in error.validator_value]
        if all(options):
            return f"config key `{where}`: give exactly one of {[o[0] for o in options]}"
        # branches by type (a number or a mapping): explain the branch of the instance's type
        specific = [e for e in error.context if e.validator != "type"]
        if specific:
            return _explain(specific[0])
        kinds = " nor ".join(
            s.get("type") or s["$ref"].rsplit("/", 1)[-1] for s in error.validator_value
        )
        return f"config key `{where}`: {error.instance!r:.80} is not of type {kinds}"
    if validator in BOUNDS and "x-bound" in error.schema:
        return f"config key `{where}`: {error.message} ({error.schema['x-bound']})"
    return f"config key `{where}`: {error.message}"


# plausibility bounds: the schema says why in `x-bound`, and the error repeats it
BOUNDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "maxItems"}


def _filling_defaults(validator_class):
    """validator_class that also sets every absent property that has a `default` as it
    validates (python-jsonschema's FAQ recipe, which Snakemake's own `validate` uses too)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_DEFAULTING_VALIDATOR = _filling_defaults(jsonschema.Draft202012Validator)


def check_schema(config: dict, schema: dict | None = None, fill_defaults: bool = False) -> None:
    """Raise ConfigError listing every schema violation, each naming its key. With
    fill_defaults, the same pass completes `config` in place with the schema's defaults."""
    schema = schema or load_schema()
    validator_class = _DEFAULTING_VALIDATOR if fill_defaults else jsonschema.Draft202012Validator
    validator = validator_class(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        refuse(
            [line for e in errors if not _derived(e, errors) for line in _explain(e).split("\n")]
        )


def canonical(value):
    """A config value with every mapping's keys in sorted order (lists keep theirs).

    Snakemake reruns a rule when a param's value prints differently from the last run, and a
    dict prints its keys in the order the YAML had them: the same model spec written in
    another order would export the model again. Params built from the config go through
    this, so only a change of value reruns a rule."""
    if isinstance(value, dict):
        return {key: canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value


# where a variant's entry (`variants.<name>`) is in the schema: with_schema_defaults's path
VARIANT_SCHEMA = ("properties", "variants", "additionalProperties")


def with_schema_defaults(value: dict, *path: str) -> dict:
    """A copy of value completed with the defaults of the schema part at path (e.g. a phone's
    `adb` entry: "$defs", "device", "properties", "adb") as check_schema completes the whole
    config: what a part built without the whole (a test's device spec) is completed with."""
    schema = load_schema()
    part = schema
    for key in path:
        part = part[key]
    value = copy.deepcopy(value)
    for _ in _DEFAULTING_VALIDATOR({**part, "$defs": schema["$defs"]}).iter_errors(value):
        pass  # the config's own check reports errors; this only fills
    return value


def runtime_defaults(schema: dict | None = None) -> dict:
    """The schema's default of every runtime key (llm_bench's own defaults)."""
    props = (schema or load_schema())["$defs"]["runtime"]["properties"]
    return {key: spec["default"] for key, spec in props.items() if "default" in spec}


# runtime keys without a default: absent, the engine keeps its own value (and reads them only
# where its libraries do: EngineKind.sme2_settings, the engine record's `reads_settings`)
SME2_SETTINGS = ("cpu_sme_core_num", "cpu_sme2_neon_division_ratio")


RESERVED_ENV = {"LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "PYTHONPATH"}


def experiment_named(config: dict) -> str | None:
    """The experiment a resolved config (a live one, or an archive's) names, None: none."""
    return config.get("experiment")


def aa_variant(config: dict) -> str | None:
    """Name of the A/A control variant (the baseline once more), if the config asks for it."""
    comparison = config["comparison"]
    return twin_of(comparison["baseline"]) if comparison.get("aa_control") else None


def twin_of(baseline: str) -> str:
    """The A/A control's variant: the baseline once more, under this name."""
    return f"{baseline}-again"


def run_variants(config: dict) -> dict:
    """The variants every device runs: the configured ones, plus the A/A control if asked."""
    variants = dict(config["variants"])
    aa = aa_variant(config)
    if aa:
        variants[aa] = variants[config["comparison"]["baseline"]]
    return variants


def prompt_image_files(config: dict, workflow_dir: str | Path) -> dict[str, str]:
    """Each `correctness.image_prompts[].image` as configured -> the file it names."""
    prompts = config.get("correctness", {}).get("image_prompts", [])
    return find_images(
        [(f"correctness.image_prompts.{i}.image", p["image"]) for i, p in enumerate(prompts)],
        workflow_dir,
    )


def vision_image_files(config: dict, workflow_dir: str | Path) -> dict[str, str]:
    """Each `bench.vision.images[]` (the vision phase's image set) -> the file it names."""
    images = config.get("bench", {}).get("vision", {}).get("images", [])
    return find_images(
        [(f"bench.vision.images.{i}", name) for i, name in enumerate(images)], workflow_dir
    )


def find_images(named: list[tuple[str, str]], workflow_dir: str | Path) -> dict[str, str]:
    """(config key, image as configured) -> {image as configured: its file}.

    A relative path is looked up in the working directory first, then in the workflow's
    own directory (where the images shipped with the workflow are, e.g. config/images/).
    """
    found, problems = {}, []
    for key, name in named:
        if not Path(name).is_absolute() and normpath(name).startswith(".."):
            problems.append(
                f"config key `{key}`: {name!r} leaves the directory it is read from (the "
                "working directory, then the workflow's); give an absolute path"
            )
            continue
        candidates = (
            [Path(name)] if Path(name).is_absolute() else [Path(name), Path(workflow_dir, name)]
        )
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            problems.append(
                f"config key `{key}`: no file {name!r} "
                f"(looked in {', '.join(str(c.parent.resolve()) for c in candidates)})"
            )
        else:
            found[name] = where_run(hit)
    if problems:
        refuse(problems)
    return found
