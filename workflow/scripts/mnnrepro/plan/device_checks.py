"""The config's checks of its devices: each names a known kind and a platform its engines are built
for, no physical device twice, device paths that fit their kind, and references to devices that
exist."""

from __future__ import annotations

from posixpath import normpath

from mnnrepro.devices.kinds import device_kind
from mnnrepro.engines.registry import kind_of_spec


def device_reference_problems(config: dict) -> list[str]:
    """The emulation reference and the profiled devices are devices."""
    problems, devices = [], config["devices"]
    reference = config.get("emulation", {}).get("reference")
    if reference and reference not in devices:
        problems.append(
            f"config key `emulation.reference`: {reference!r} is not a device; "
            f"defined devices: {sorted(devices)}"
        )
    unknown = sorted(set(config.get("attribution", {}).get("devices", [])) - set(devices))
    if unknown:
        problems.append(
            f"config key `attribution.devices`: {unknown} are not devices; "
            f"defined devices: {sorted(devices)}"
        )
    return problems


def variant_engines(config: dict):
    """(name, variant, its engine's config, that engine's kind) of every variant whose engine
    is defined (config.check_references names one that is not)."""
    for name, variant in sorted(config["variants"].items()):
        spec = config["engines"].get(variant["engine"])
        if spec is not None:
            yield name, variant, spec, kind_of_spec(spec)


def device_kinds(config: dict):
    """(name, config, kind) of every device."""
    for name, spec in sorted(config["devices"].items()):
        yield name, spec, device_kind(name, spec)


def platform_problems(config: dict) -> list[str]:
    """A variant whose engine is built for a platform its device cannot run."""
    problems = []
    for name, variant, spec, kind in variant_engines(config):
        built_for = kind.platform(spec)
        if built_for is None:
            continue
        for device, _, device_type in device_kinds(config):
            runs = device_type.platforms
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
    for name, spec, kind in device_kinds(config):
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
    for name, spec, kind in device_kinds(config):
        for key in kind.device_paths:
            path = spec[kind.key].get(key) or ""
            if ".." in path.split("/") or (path and normpath(path) != path.rstrip("/")):
                problems.append(
                    f"config key `devices.{name}.{kind.key}.{key}`: {path!r} is not a plain "
                    f"absolute path (no `..`, `.` or `//` segments; it would mean "
                    f"{normpath(path)!r})"
                )
    return problems
