"""Every rule that runs software has a pinned conda env, and the pins agree with pyproject."""

from __future__ import annotations

import re
import tomllib

import pytest
import yaml
from conftest import run_snakemake, snakemake_rules

NEEDS_NO_ENV = {"all", "archive", "build_all", "models_all", "runs_all", "analysis_all"}  # targets


def env_pins(path) -> dict[str, str]:
    spec = yaml.safe_load(path.read_text())
    pins = {}
    for dep in spec["dependencies"]:
        if isinstance(dep, dict):
            for pip_dep in dep["pip"]:
                name, sep, version = pip_dep.partition("==")
                assert sep and re.fullmatch(r"[\w.+-]+", version), f"{path.name}: {pip_dep}"
                pins[name.lower()] = version
        else:
            name, sep, version = dep.partition("=")
            assert sep and re.fullmatch(r"[\w.+-]+", version), f"{path.name}: {dep}"
            pins[name.lower()] = version
    return pins


def test_every_rule_running_software_has_an_env(root):
    seen = 0
    for smk, name, body in snakemake_rules(root):
        if name in NEEDS_NO_ENV:
            continue
        seen += 1
        assert "script:" in body or "shell:" in body, f"{smk}: rule {name} runs nothing"
        match = re.search(r'conda:\s*\n\s*"([^"]+)"', body)
        assert match, f"{smk}: rule {name} has no conda env"
        assert (root / "workflow" / "rules" / match.group(1)).resolve().is_file()
    assert seen >= 10


@pytest.mark.parametrize("env", ["analysis", "bench", "export"])
def test_env_pins_are_exact_and_agree_with_pyproject(root, env):
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    pinned = {}
    for dep in project["dependencies"]:
        name, _, version = dep.partition("==")
        pinned[name.lower()] = version
    for name, version in env_pins(root / "envs" / f"{env}.yaml").items():
        if name in pinned:
            assert version == pinned[name], (
                f"envs/{env}.yaml pins {name}={version}, pyproject.toml {pinned[name]}"
            )


def test_pyproject_pins_every_dependency_exactly(root):
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + [
        d for v in project["optional-dependencies"].values() for d in v
    ]
    for dep in deps:
        assert re.fullmatch(r"[\w.-]+==[\w.+-]+", dep), dep


def test_slurm_profile_dry_run(root, tmp_path):
    proc = run_snakemake(root, "-n", "--profile", "profiles/slurm", "--directory", str(tmp_path))
    assert "export_mnn_model" in proc.stdout
