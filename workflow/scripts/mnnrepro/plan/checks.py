"""What a config must hold beyond its schema, refused before any job runs with one line per
problem naming the config key: cross-references between sections, names the workflow
reserves, local directories that must exist, and what the engine and device kinds' registries
declare (platforms, physical devices, device paths, integer settings)."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

from mnnrepro.config import (
    RESERVED_ENV,
    VARIANT_SCHEMA,
    aa_variant,
    check_schema,
    refuse,
    runtime_defaults,
    with_schema_defaults,
)
from mnnrepro.design import pairs_of, variants_of
from mnnrepro.devices.kinds import device_kind
from mnnrepro.devices.qemu import vector_length_problems
from mnnrepro.engines.registry import KINDS, kind_of_spec
from mnnrepro.files import sha256_file
from mnnrepro.models.shapes import VISION_SHAPES
from mnnrepro.plan.device_checks import (
    device_path_problems,
    device_reference_problems,
    duplicate_device_problems,
    platform_problems,
    variant_engines,
)
from mnnrepro.plan.prediction import prediction_problems
from mnnrepro.repetitions import Repetitions
from mnnrepro.sweep_plan import sweep_problems


def check(config: dict, local_paths: bool = True, fill_defaults: bool = False) -> None:
    """The config's schema and cross-references; with local_paths (a live run, not a replay,
    which builds nothing) also that the local directories it names exist; with fill_defaults,
    the schema's defaults filled in place by the same pass."""
    # the variants as written (an archive's resolved config has the defaults in it)
    written = copy.deepcopy(config.get("variants")) if local_paths else None
    check_schema(config, fill_defaults=fill_defaults)
    check_references(config, written)
    missing = missing_local_paths(config) + patch_pin_problems(config) if local_paths else []
    if missing:
        refuse(missing)


def completed_variants(config: dict) -> dict:
    """The config's variants as the plan completes them (the schema's defaults filled in: the
    checks also run on a config not yet filled)."""
    variants = config["variants"]
    return variants_of({n: with_schema_defaults(v, *VARIANT_SCHEMA) for n, v in variants.items()})


def check_references(config: dict, written: dict | None = None) -> None:
    """Cross-references between sections, which JSON Schema cannot express; written: the
    variants as written, before the schema's defaults were filled in (default: as they stand,
    less the schema's defaults, as an archive's resolved config has them)."""
    problems = [
        *variant_problems(config),
        *toolchain_problems(config),
        *device_reference_problems(config),
        *repetition_problems(config),
        *sweep_problems(
            config.get("bench", {}).get("sweep") or {},
            completed_variants(config),
            pairs_of(config["comparison"]),
        ),
        *reserved_name_clashes(config),
        *kind_problems(config),
        *unmeasurable_claims(config),
        *runtime_key_problems(config, written),
        *prediction_problems(config),
    ]
    if problems:
        refuse(problems)


def runtime_key_problems(config: dict, written: dict | None = None) -> list[str]:
    """A runtime key the variant's engine kind does not read (EngineKind.runtime_keys), which
    it would run without a word; a division ratio MNN cannot read as 8*x + y, x and y 1..7."""
    problems, filled = [], runtime_defaults() if written is None else {}
    for name, variant in sorted(config["variants"].items()):
        spec = config["engines"].get(variant["engine"])
        runtime = (written or {}).get(name, variant).get("runtime") or {}
        runtime = {k: v for k, v in runtime.items() if k not in filled or filled[k] != v}
        kind = kind_of_spec(spec) if spec is not None else None
        for key in sorted(k for k in runtime if kind and k not in kind.runtime_keys):
            problems.append(
                f"config key `variants.{name}.runtime.{key}`: engine {variant['engine']} "
                f"({kind.kind}) does not read it (it reads {', '.join(kind.runtime_keys)})"
            )
        ratio = runtime.get("cpu_sme2_neon_division_ratio")
        if ratio is not None and ratio % 8 == 0:
            problems.append(
                f"config key `variants.{name}.runtime.cpu_sme2_neon_division_ratio`: {ratio} is "
                f"8*{ratio // 8} + 0; MNN reads it as 8*x + y with x and y in 1..7 (41: 5:1 "
                "in prefill, 1:1 in decode)"
            )
    return problems


# the phases only a model that takes images has, asked by engines that take images
IMAGE_PHASES = ("vision", "image_prefill", "first_token")


def unmeasurable_claims(config: dict) -> list[str]:
    """A claim on an image phase that this experiment can never measure, so never judge: no
    image set, a pair whose engine takes no images, or only text models (a synthetic shape
    that is not a vision one; a downloaded model is known only once it is here)."""
    claimed = [p for p in IMAGE_PHASES if p in config["comparison"].get("claims", {})]
    if not claimed:
        return []
    models = config["models"].values()
    text_only = all(
        m.get("synthetic", {}).get("shape", "tiny-vl") not in VISION_SHAPES for m in models
    )
    problems = []
    for phase in claimed:
        key = f"config key `comparison.claims.{phase}`"
        if config["bench"].get("vision", {}).get("images") == []:  # absent: the default set
            problems.append(f"{key}: no image set measures it (`bench.vision.images` is [])")
        if text_only:
            problems.append(
                f"{key}: no model of this experiment takes images ({sorted(config['models'])})"
            )
        for pair in pairs_of(config["comparison"]):
            for role in ("baseline", "treatment"):
                variant = config["variants"].get(getattr(pair, role), {})
                spec = config["engines"].get(variant.get("engine"))
                if spec is not None and not kind_of_spec(spec).takes_images:
                    problems.append(
                        f"{key}: `{pair.key}.{role}` {getattr(pair, role)} runs engine "
                        f"{variant['engine']}, which takes no images"
                    )
    return problems


def variant_problems(config: dict) -> list[str]:
    """Variants name engines, pairs name variants, the workflow's own env is its own; each
    engine kind's own checks; a model's checkpoint only beside a download."""
    problems, engines = [], config["engines"]
    for name, variant in config["variants"].items():
        if variant["engine"] not in engines:
            problems.append(
                f"config key `variants.{name}.engine`: {variant['engine']!r} is not an engine; "
                f"defined engines: {sorted(engines)}"
            )
        for var in sorted(set(variant.get("env", {})) & RESERVED_ENV):
            problems.append(
                f"config key `variants.{name}.env.{var}`: set by the workflow itself "
                f"(reserved: {sorted(RESERVED_ENV)})"
            )
    for pair in pairs_of(config["comparison"]):
        for role in ("baseline", "treatment"):
            if getattr(pair, role) not in config["variants"]:
                problems.append(
                    f"config key `{pair.key}.{role}`: {getattr(pair, role)!r} is not a variant; "
                    f"defined variants: {sorted(config['variants'])}"
                )
        if pair.baseline == pair.treatment:
            problems.append(f"config key `{pair.key}`: baseline and treatment must differ")
    by_kind: dict = {}
    for name, spec in sorted(engines.items()):
        by_kind.setdefault(kind_of_spec(spec), {})[name] = spec
    for kind, of_kind in by_kind.items():
        section = config.get(kind.config_section, {})  # a source tree, or pinned archives
        problems += kind.config_problems(of_kind, section, config.get("models", {}))
    for m, spec in config.get("models", {}).items():
        if "checkpoint" in spec and "modelscope" not in spec:
            problems.append(
                f"config key `models.{m}.checkpoint`: only for a `modelscope` model (the others "
                "are converted from their own checkpoint)"
            )
    return problems


def toolchain_problems(config: dict) -> list[str]:
    """An Android build needs the pinned NDK; an emulated device the pinned QEMU."""
    problems, toolchains = [], config.get("toolchains", {})
    android = sorted(
        n for n, e in config["engines"].items() if kind_of_spec(e).platform(e) == "android-arm64"
    )
    if android and "ndk" not in toolchains:
        problems.append(
            f"config key `toolchains.ndk`: engines {android} build for "
            "android-arm64 and need the pinned NDK"
        )
    phones = sorted(
        n for n, d in config["devices"].items() if device_kind(n, d).platform == "android-arm64"
    )
    masked = sorted(n for n, v in config["variants"].items() if v.get("hide_sme"))
    if phones and masked and "ndk" not in toolchains:
        problems.append(
            f"config key `toolchains.ndk`: variants {masked} hide SME on devices {phones}, "
            "whose SME mask is built with the pinned NDK"
        )
    emulated = sorted(n for n, d in config["devices"].items() if device_kind(n, d).needs_userland)
    if emulated and "emulation" not in toolchains:
        problems.append(
            f"config key `toolchains.emulation`: devices {emulated} are emulated "
            "and need the pinned QEMU and arm64 userland"
        )
    return problems


def repetition_problems(config: dict) -> list[str]:
    bench = config.get("bench", {})
    given = {
        "bench.repetitions": bench.get("repetitions"),
        "bench.sweep.repetitions": (bench.get("sweep") or {}).get("repetitions"),
    }
    ranges = {key: Repetitions.of(value) for key, value in given.items() if value is not None}
    problems = []
    for key, r in ranges.items():
        if r.min > r.max:
            problems.append(f"config key `{key}.min`: {r.min} is more than `{key}.max` {r.max}")
        if r.budget_s is not None and not r.stops_on_verdict:  # the schema ties `looks`
            problems.append(
                f"config key `{key}.budget_s`: only a run that stops on its verdict "
                f"(`{key}.until: verdict`) reads it; this one would run without it"
            )
        if r.stops_on_verdict and r.looks and r.looks > r.max - r.min + 1 and r.min <= r.max:
            problems.append(
                f"config key `{key}.looks`: {r.looks} planned looks do not fit in blocks "
                f"{r.min} to {r.max} ({r.max - r.min + 1} blocks): the run would judge at "
                f"{len(r.planned_looks())} looks, not {r.looks}"
            )
    return problems


# results/<name>/ the workflow itself uses; an experiment of that name would mix with them
RESERVED_EXPERIMENTS = {"engines", "models", "replay"}


def missing_local_paths(config: dict) -> list[str]:
    """Local directories the config names that do not exist (relative to the working
    directory): said before any job, naming the key, instead of a rule that cannot run."""
    named = []
    for section in sorted({kind.config_section for kind in KINDS if kind.from_source}):
        source = config.get(section, {}).get("source", {})
        if "path" in source:
            named.append((f"{section}.source.path", source["path"]))
    for name, spec in sorted(config.get("engines", {}).items()):
        kind = kind_of_spec(spec)
        own = spec.get(kind.config_key, {}).get("source", {}) if kind.from_source else {}
        if "path" in own:
            named.append((f"engines.{name}.{kind.config_key}.source.path", own["path"]))
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


def patch_pin_problems(config: dict) -> list[str]:
    """Every patch the config pins (a source section's, an engine's own), checked against its
    sha256 when the config is read: a dry run names an edited or missing patch by its key,
    before any fetch or build (fetch_source checks it again where it applies it)."""
    pinned = []
    for section in sorted({kind.config_section for kind in KINDS if kind.from_source}):
        pinned += [(f"{section}.patches", config.get(section, {}).get("patches", []))]
    for name, spec in sorted(config.get("engines", {}).items()):
        kind = kind_of_spec(spec)
        if kind.from_source:
            own = spec.get(kind.config_key, {}).get("patches", [])
            pinned.append((f"engines.{name}.{kind.config_key}.patches", own))
    problems = []
    for key, patches in pinned:
        for i, patch in enumerate(patches or []):
            path = Path(patch["path"]).expanduser()
            if not path.is_file():
                problems.append(f"config key `{key}.{i}.path`: no file {patch['path']!r}")
            elif (found := sha256_file(path)) != patch["sha256"]:
                problems.append(
                    f"config key `{key}.{i}.sha256`: {patch['path']} has sha256 {found}, not "
                    "the pinned one; pin the patch you mean to measure"
                )
    return problems


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


INTEGER = re.compile(r"^-?\d+$")


def integer_env_problems(config: dict) -> list[str]:
    """An environment variable the engine reads as an integer, set to something else."""
    problems = []
    for name, variant, _, kind in variant_engines(config):
        for var in kind.integer_env:
            value = variant.get("env", {}).get(var)
            if value is not None and not INTEGER.match(value):
                problems.append(
                    f"config key `variants.{name}.env.{var}`: {value!r} is not an integer; "
                    f"the engine reads {var} as one (a word reads as 0)"
                )
    return problems


def mask_problems(config: dict) -> list[str]:
    """A variant hides SME from an engine the SME mask cannot reach (EngineKind.sme_mask_misses:
    a kind that learns about SME otherwise than from getauxval)."""
    return [
        f"config key `variants.{name}.hide_sme`: engine {variant['engine']} ({kind.kind}) "
        f"{kind.sme_mask_misses}; the SME mask hides SME from getauxval only"
        for name, variant, _, kind in variant_engines(config)
        if variant.get("hide_sme") and kind.sme_mask_misses
    ]


def kind_problems(config: dict) -> list[str]:
    return (
        platform_problems(config)
        + duplicate_device_problems(config)
        + device_path_problems(config)
        + integer_env_problems(config)
        + mask_problems(config)
        + vector_length_problems(config.get("devices", {}))
    )
