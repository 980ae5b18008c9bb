"""Checks of a config against what its engine and device kinds declare (platforms, physical
devices, device paths, integer settings): refused before any job runs, one line per problem
naming the config key. config.py checks what the schema and cross-references alone decide;
these need the kinds' registries, which import config.py."""

from __future__ import annotations

import re
from posixpath import normpath

from mnnrepro.devices.kinds import device_kind
from mnnrepro.engines.registry import kind_of_spec

INTEGER = re.compile(r"^-?\d+$")


def platform_problems(config: dict) -> list[str]:
    """A variant whose engine is built for a platform its device cannot run."""
    problems = []
    for name, variant in sorted(config["variants"].items()):
        spec = config["engines"].get(variant["engine"])
        if spec is None:
            continue  # config.check_references names it
        kind = kind_of_spec(spec)
        built_for = kind.platform(spec)
        if built_for is None:
            continue
        for device, device_spec in sorted(config["devices"].items()):
            runs = device_kind(device, device_spec).platforms
            if built_for not in runs:
                problems.append(
                    f"config key `engines.{variant['engine']}.{kind.config_key}.platform`: "
                    f"{built_for!r}, but variant {name} runs on device {device}, which runs "
                    f"{' or '.join(runs)} binaries"
                )
    return problems


def duplicate_device_problems(config: dict) -> list[str]:
    """One physical device under two names: their runs would interleave on one device."""
    seen: dict[tuple, str] = {}
    problems = []
    for name, spec in sorted(config["devices"].items()):
        kind = device_kind(name, spec)
        if kind.identity is None:
            continue
        settings = spec[kind.key]
        identity = (kind.key, *(str(settings.get(k, "")) for k in kind.identity))
        if identity in seen:
            problems.append(
                f"config key `devices.{name}`: the same {kind.key} device as "
                f"`devices.{seen[identity]}` ({', '.join(kind.identity)} equal); one physical "
                "device is listed once"
            )
        seen.setdefault(identity, name)
    return problems


def device_path_problems(config: dict) -> list[str]:
    """A device path with a `..` segment leaves the directory it names."""
    problems = []
    for name, spec in sorted(config["devices"].items()):
        kind = device_kind(name, spec)
        for key in kind.device_paths:
            path = spec[kind.key].get(key) or ""
            if ".." in path.split("/") or (path and normpath(path) != path.rstrip("/")):
                problems.append(
                    f"config key `devices.{name}.{kind.key}.{key}`: {path!r} is not a plain "
                    f"absolute path (no `..`, `.` or `//` segments; it would mean "
                    f"{normpath(path)!r})"
                )
    return problems


def integer_env_problems(config: dict) -> list[str]:
    """An environment variable the engine reads as an integer, set to something else."""
    problems = []
    for name, variant in sorted(config["variants"].items()):
        spec = config["engines"].get(variant["engine"])
        if spec is None:
            continue
        for var in kind_of_spec(spec).integer_env:
            value = variant.get("env", {}).get(var)
            if value is not None and not INTEGER.match(value):
                problems.append(
                    f"config key `variants.{name}.env.{var}`: {value!r} is not an integer; "
                    f"the engine reads {var} as one (a word reads as 0)"
                )
    return problems


def kind_problems(config: dict) -> list[str]:
    return (
        platform_problems(config)
        + duplicate_device_problems(config)
        + device_path_problems(config)
        + integer_env_problems(config)
    )
