"""Validate an experiment config: schema first, then the cross-references a schema cannot say."""

from __future__ import annotations

import os
from pathlib import Path

import jsonschema
import yaml

from mnnrepro.errors import ReproError

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


def check_config_files(paths) -> None:
    """Every config file given must be YAML without a duplicate key (Snakemake's own loader
    keeps the last of two, silently)."""
    for path in paths:
        load_yaml(Path(path).read_text(encoding="utf-8"), str(path))


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _explain(error: jsonschema.ValidationError) -> str:
    where = _key(error.absolute_path)
    validator = error.validator
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return f"config key `{where}`: unknown key(s) {extra}; allowed: {allowed}"
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


def check_schema(config: dict, schema: dict | None = None) -> None:
    """Raise ConfigError listing every schema violation, each naming its key."""
    schema = schema or load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        refuse([_explain(e) for e in errors])


def check_references(config: dict) -> None:
    """Cross-references between sections, which JSON Schema cannot express."""
    problems = []
    engines = config["engines"]
    for name, variant in config["variants"].items():
        if variant["engine"] not in engines:
            problems.append(
                f"config key `variants.{name}.engine`: {variant['engine']!r} is not an engine; "
                f"defined engines: {sorted(engines)}"
            )
    comparison = config["comparison"]
    for key, pair in comparison_keys(comparison):
        for role in ("baseline", "treatment"):
            if pair[role] not in config["variants"]:
                problems.append(
                    f"config key `{key}.{role}`: {pair[role]!r} is not a variant; "
                    f"defined variants: {sorted(config['variants'])}"
                )
        if pair["baseline"] == pair["treatment"]:
            problems.append(f"config key `{key}`: baseline and treatment must differ")
    for name, variant in config["variants"].items():
        for var in sorted(set(variant.get("env", {})) & RESERVED_ENV):
            problems.append(
                f"config key `variants.{name}.env.{var}`: set by the workflow itself "
                f"(reserved: {sorted(RESERVED_ENV)})"
            )
    builds = {n: e["build"] for n, e in engines.items() if "build" in e}
    if builds and "source" not in config.get("mnn", {}):
        problems.append(
            f"config key `mnn.source`: engines {sorted(builds)} are built from "
            "source; give `mnn.source` (git + commit, path, or archive + sha256)"
        )
    llamas = {n: e["llamacpp"] for n, e in engines.items() if "llamacpp" in e}
    if llamas and "llamacpp" not in config:
        problems.append(
            f"config key `llamacpp`: engines {sorted(llamas)} are llama.cpp built from "
            "source; give `llamacpp.source` (sdist or path) and `llamacpp.kleidiai`"
        )
    kleidiai = sorted(
        n for n, e in llamas.items() if e.get("flags", {}).get("GGML_CPU_KLEIDIAI") in (True, "ON")
    )
    if kleidiai and "kleidiai" not in config.get("llamacpp", {}):
        problems.append(
            f"config key `llamacpp.kleidiai`: engines {kleidiai} build with GGML_CPU_KLEIDIAI, "
            "which would download KleidiAI at configure time; pin its archive (version, url, "
            "md5 or sha256)"
        )
    if llamas:  # the GGUF is converted from a transformers checkpoint
        without = sorted(
            m
            for m, spec in config.get("models", {}).items()
            if "modelscope" in spec and "checkpoint" not in spec
        )
        if without:
            problems.append(
                f"config key `models`: {without} are MNN exports downloaded as they are; the "
                f"llama.cpp engines {sorted(llamas)} need the transformers checkpoint "
                "(`synthetic`, `export`, or `checkpoint.modelscope` beside `modelscope`)"
            )
    for m, spec in config.get("models", {}).items():
        if "checkpoint" in spec and "modelscope" not in spec:
            problems.append(
                f"config key `models.{m}.checkpoint`: only for a `modelscope` model (the others "
                "are converted from their own checkpoint)"
            )
    builds = {**builds, **llamas}
    android = sorted(n for n, b in builds.items() if b["platform"] == "android-arm64")
    if android and "ndk" not in config.get("toolchains", {}):
        problems.append(
            f"config key `toolchains.ndk`: engines {android} build for "
            "android-arm64 and need the pinned NDK"
        )
    emulated = sorted(n for n, d in config["devices"].items() if "qemu" in d)
    if emulated and "emulation" not in config.get("toolchains", {}):
        problems.append(
            f"config key `toolchains.emulation`: devices {emulated} are emulated "
            "and need the pinned QEMU and arm64 userland"
        )
    reference = config.get("emulation", {}).get("reference")
    if reference and reference not in config["devices"]:
        problems.append(
            f"config key `emulation.reference`: {reference!r} is not a device; "
            f"defined devices: {sorted(config['devices'])}"
        )
    bench = config.get("bench", {})
    for key, repetitions in (
        ("bench.repetitions", bench.get("repetitions")),
        ("bench.sweep.repetitions", (bench.get("sweep") or {}).get("repetitions")),
    ):
        if isinstance(repetitions, dict) and repetitions["min"] > repetitions["max"]:
            problems.append(
                f"config key `{key}.min`: {repetitions['min']} is more than "
                f"`{key}.max` {repetitions['max']}"
            )
    problems += sweep_problems(config)
    problems += reserved_name_clashes(config)
    if problems:
        refuse(problems)


# results/<name>/ the workflow itself uses; an experiment of that name would mix with them
RESERVED_EXPERIMENTS = {"engines", "models", "replay"}


def missing_local_paths(config: dict) -> list[str]:
    """Local directories the config names that do not exist (relative to the working
    directory): said before any job, naming the key, instead of a rule that cannot run."""
    named = []
    for section in ("mnn", "llamacpp"):
        source = config.get(section, {}).get("source", {})
        if "path" in source:
            named.append((f"{section}.source.path", source["path"]))
    for name, spec in config.get("models", {}).items():
        local = spec.get("export", {}).get("from", {}).get("path")
        if local is not None:
            named.append((f"models.{name}.export.from.path", local))
    return [
        f"config key `{key}`: {path!r} is not a directory (relative paths are read from the "
        f"working directory, {os.getcwd()})"
        for key, path in named
        if not Path(path).expanduser().is_dir()
    ]


def reserved_name_clashes(config: dict) -> list[str]:
    """Names the workflow generates must not be names the user chose: the A/A control's copy
    of the baseline (a variant) and the shared result directories (experiments)."""
    problems = []
    aa = aa_variant(config)
    if aa in config["variants"]:
        problems.append(
            f"config key `variants.{aa}`: the name is taken by the A/A control "
            f"(`comparison.aa_control` runs the baseline "
            f"{config['comparison']['baseline']!r} again as {aa!r}); rename the variant "
            "or turn the control off"
        )
    if config.get("experiment") in RESERVED_EXPERIMENTS:
        problems.append(
            f"config key `experiment`: {config['experiment']!r} is the workflow's own "
            f"results/{config['experiment']}/ directory (reserved: {sorted(RESERVED_EXPERIMENTS)})"
        )
    return problems


SWEEP_KEYS = ("prompt_tokens", "generate_tokens", "thread_num")


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


def thread_nums(variants: dict) -> dict[str, int]:
    """Variant -> the thread count it runs with (llm_bench's default where it sets none)."""
    return {
        name: with_runtime_defaults(v.get("runtime", {}))["thread_num"]
        for name, v in variants.items()
    }


def sweep_problems(config: dict) -> list[str]:
    """A thread sweep sets every variant's thread_num: it cannot sweep a pair that differs in
    it (both sides would become the same)."""
    threads = config.get("bench", {}).get("sweep", {}).get("thread_num")
    if not threads:
        return []
    problems = []
    threads_of = thread_nums(config["variants"])
    for key, pair in comparison_keys(config["comparison"]):
        values = {name: threads_of.get(name) for name in (pair["baseline"], pair["treatment"])}
        if len(set(values.values())) > 1:
            problems.append(
                f"config key `bench.sweep.thread_num`: the pair `{key}` differs in thread_num "
                f"({values}); a thread sweep sets both to the same value - drop it, or compare "
                "variants that differ in something else"
            )
    return problems


def sweep_points(config: dict) -> dict[str, dict]:
    """Point label -> its settings. Each swept dimension is varied on its own around the main
    point (the others keep the main point's value), so the cost grows with the sum of the
    lists, not their product; a value equal to the main point's is the main point itself and
    is not measured twice. thread_num None: each variant's own."""
    bench = config["bench"]
    sweep = bench.get("sweep") or {}
    main = {
        "prompt_tokens": bench["prompt_tokens"],
        "generate_tokens": bench["generate_tokens"],
        "thread_num": None,
    }
    common_threads = set(thread_nums(config["variants"]).values())
    points = {}
    for key in SWEEP_KEYS:
        for value in sweep.get(key) or []:
            if value == main[key] or (key == "thread_num" and {value} == common_threads):
                continue
            point = {**main, key: value}
            points[point_label(point)] = point
    return points


def point_label(point: dict) -> str:
    """`p256-n32-t2` (t-: each variant's own thread_num)."""
    threads = point["thread_num"]
    return (
        f"p{point['prompt_tokens']}-n{point['generate_tokens']}-t"
        f"{'-' if threads is None else threads}"
    )


def point_bench(bench: dict, point: dict) -> dict:
    """The bench settings of one sweep point (its own P and N and the sweep's repetitions;
    no nested sweep)."""
    return {
        **{k: v for k, v in bench.items() if k != "sweep"},
        "prompt_tokens": point["prompt_tokens"],
        "generate_tokens": point["generate_tokens"],
        "repetitions": sweep_repetitions(bench),
    }


def sweep_repetitions(bench: dict):
    """`bench.sweep.repetitions`, else the main point's `bench.repetitions`."""
    return (bench.get("sweep") or {}).get("repetitions", bench["repetitions"])


def point_variants(variants: dict, point: dict) -> dict:
    """Every variant of one sweep point (thread_num set where the point sets it)."""
    if point["thread_num"] is None:
        return variants
    return {
        name: {**v, "runtime": {**v.get("runtime", {}), "thread_num": point["thread_num"]}}
        for name, v in variants.items()
    }


def runtime_defaults(schema: dict | None = None) -> dict:
    """The schema's default of every runtime key (llm_bench's own defaults)."""
    props = (schema or load_schema())["$defs"]["runtime"]["properties"]
    return {key: spec["default"] for key, spec in props.items()}


def with_runtime_defaults(runtime: dict) -> dict:
    """A variant's runtime as one explicit value: every key, defaults from the schema."""
    return {**runtime_defaults(), **runtime}


RESERVED_ENV = {"LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "PYTHONPATH"}


def comparison_keys(comparison: dict) -> list[tuple[str, dict]]:
    """Every compared pair with its config key: the main one, then `comparison.also`."""
    return [("comparison", comparison)] + [
        (f"comparison.also.{i}", pair) for i, pair in enumerate(comparison.get("also", []))
    ]


def comparison_pairs(comparison: dict) -> list[tuple[str, str]]:
    return [(pair["baseline"], pair["treatment"]) for _, pair in comparison_keys(comparison)]


def aa_variant(config: dict) -> str | None:
    """Name of the A/A control variant (the baseline once more), if the config asks for it."""
    comparison = config["comparison"]
    return f"{comparison['baseline']}-again" if comparison.get("aa_control") else None


def judged_pairs(config: dict) -> list[tuple[str, str]]:
    """Every pair a summary judges: the compared pairs, then the A/A control if asked."""
    aa = aa_variant(config)
    pairs = comparison_pairs(config["comparison"])
    return pairs + ([(config["comparison"]["baseline"], aa)] if aa else [])


def run_variants(config: dict) -> dict:
    """The variants every device runs: the configured ones, plus the A/A control if asked."""
    variants = dict(config["variants"])
    aa = aa_variant(config)
    if aa:
        variants[aa] = variants[config["comparison"]["baseline"]]
    return variants


def prompt_images(config: dict, workflow_dir: str | Path) -> dict[str, str]:
    """Each `correctness.image_prompts[].image` as configured -> the file it names.

    A relative path is looked up in the working directory first, then in the workflow's
    own directory (where the images shipped with the workflow are, e.g. config/images/).
    """
    found, problems = {}, []
    for i, prompt in enumerate(config.get("correctness", {}).get("image_prompts", [])):
        name = prompt["image"]
        candidates = (
            [Path(name)] if Path(name).is_absolute() else [Path(name), Path(workflow_dir, name)]
        )
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            problems.append(
                f"config key `correctness.image_prompts.{i}.image`: no file {name!r} "
                f"(looked in {', '.join(str(c.parent.resolve()) for c in candidates)})"
            )
        else:
            found[name] = str(hit.resolve())
    if problems:
        refuse(problems)
    return found


def check(config: dict, local_paths: bool = True) -> None:
    """The config's schema and cross-references; with local_paths (a live run, not a replay,
    which builds nothing) also that the local directories it names exist."""
    check_schema(config)
    check_references(config)
    missing = missing_local_paths(config) if local_paths else []
    if missing:
        refuse(missing)


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
        "PYTHONPATH=workflow/scripts python -m mnnrepro.config > config/README.md -->",
        "",
        "Every key, its type, default and meaning is in `workflow/schemas/config.schema.yaml`;",
        "a config is checked against it (and cross-checked) before any job runs. Run one with",
        "`snakemake --cores 4 --configfile config/<file>` (it replaces the default,",
        "`config.yaml`).",
        "",
        "| file | experiment |",
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
