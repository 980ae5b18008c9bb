"""Every rule that runs software has a pinned conda env, and each env holds what its rules import.

conda itself cannot run here (no conda channel is reachable from this workplace), so the envs'
conda parts (python, pip, build tools) are not installed by any test. Their pip parts are:
`test_env_installs_alone_and_imports_its_rules` installs each one, hash-checked, into a fresh
venv that sees none of the host's packages, and imports there every module its rules reach.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest
import yaml
from conftest import ROOT, pypi_reachable, run_snakemake, snakemake_rules

sys.path.insert(0, str(ROOT / "envs"))
import closure

# its module-scoped fixture is built once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("env-venvs")

NEEDS_NO_ENV = {"all", "archive", "store", "build_all", "models_all", "runs_all", "analysis_all"}
ENVS = sorted(closure.env_rules())


def env_pins(path) -> dict[str, str]:
    """name -> version of every package an env file pins (conda and pip parts)."""
    spec = yaml.safe_load(path.read_text())
    pins = {}
    for dep in spec["dependencies"]:
        if isinstance(dep, dict):
            for pip_dep in dep["pip"]:
                if pip_dep.startswith("--"):  # an index option
                    continue
                requirement = pip_dep.split()[0]
                name, sep, version = requirement.partition("==")
                assert sep and re.fullmatch(r"[\w.+-]+", version), f"{path.name}: {pip_dep}"
                assert "--hash=sha256:" in pip_dep, f"{path.name}: {requirement} has no hash"
                pins[closure.normal(name)] = version
        else:
            name, sep, version = dep.partition("=")
            assert sep and re.fullmatch(r"[\w.+-]+", version), f"{path.name}: {dep}"
            pins[closure.normal(name)] = version
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
    assert ENVS == ["analysis.yaml", "bench.yaml", "build.yaml", "export.yaml"]


@pytest.mark.parametrize("env", ENVS)
def test_env_pins_are_exact_hashed_and_agree_with_pyproject(root, env):
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    pinned = {}
    for dep in [*project["dependencies"], *project["optional-dependencies"]["engine"]]:
        name, _, version = dep.partition("==")
        pinned[closure.normal(name)] = version
    pins = env_pins(root / "envs" / env)
    assert pins["python"] == "3.11.7"  # the lock the pip part is copied from is Python 3.11's
    for name, version in pins.items():
        if name in pinned:
            assert version.split("+")[0] == pinned[name], (
                f"envs/{env} pins {name}={version}, pyproject.toml {pinned[name]}"
            )


@pytest.mark.parametrize("env", ENVS)
def test_env_pip_part_is_the_locks_own_lines(root, env):
    """Same versions and the same hashes as locks/py311.txt, which install.sh installs."""
    blocks = closure.lock_blocks()
    lines = closure.env_pip_part((root / "envs" / env).read_text())
    requirements = [line for line in lines if not line.startswith("--")]
    for line in lines:
        if line.startswith("--"):
            assert line == "--extra-index-url https://download.pytorch.org/whl/cpu"
    names = [closure.normal(line.split("==")[0]) for line in requirements]
    # one read of the lock; pip_lines gives its lines in sorted name order
    expected = dict(zip(sorted(set(names)), closure.pip_lines(set(names)), strict=True))
    for name, line in zip(names, requirements, strict=True):
        assert line == expected[name], f"envs/{env}: {name} differs from locks/py311.txt"
        assert len(re.findall("--hash=", line)) == len(blocks[name]) - 1


@pytest.mark.parametrize("env", ENVS)
def test_every_env_holds_the_import_closure_of_its_rules(env):
    assert closure.gaps(env, closure.env_closure(env)) == []


def test_the_closure_follows_lazy_imports_programs_and_requirements():
    """What the check must see, on rules whose needs are known: a gap is found, not hidden."""
    by_name = {rule.name: rule for rule in closure.rules()}
    bench = closure.closure_of([by_name["run_bench"].script])
    # run_bench -> runs.benchmark -> runs.precision -> stats imports pandas and scipy
    assert {"pandas", "scipy"} <= bench.distributions
    # the engine runner is a program started with sys.executable: its `import MNN` counts
    assert "mnnrepro.engines.runner.python_runner" in bench.modules and "mnn" in bench.distributions
    export = closure.closure_of([by_name["export_mnn_model"].script])
    # llmexport_main is started as a program; llmexport requires torch (metadata, not imports)
    assert {"llmexport", "torch", "onnx"} <= export.distributions
    plot = closure.closure_of([by_name["plot"].script])
    assert "vl-convert-python" in plot.distributions  # through altair's save (an extra)
    build = closure.closure_of([by_name["build_engine"].script])
    # the build rules ask the engine kind (engines/), whose runtime defaults come from the
    # config schema: the config reader's two distributions and their requirements, no more
    assert build.distributions == closure.requirement_closure({"jsonschema", "pyyaml"})
    convert = closure.closure_of([by_name["convert_gguf_model"].script])
    # llama.cpp's converter, started as a program from the fetched tree, imports torch
    assert {"torch", "transformers", "sentencepiece", "tqdm"} <= convert.distributions


def test_a_missing_package_is_reported_with_the_rules_that_need_it(tmp_path, monkeypatch):
    env_file = ROOT / "envs" / "bench.yaml"
    lines = [line for line in env_file.read_text().splitlines() if '"scipy==' not in line]
    copy = tmp_path / "envs" / "bench.yaml"
    copy.parent.mkdir()
    copy.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(closure, "ROOT", tmp_path)
    problems = closure.gaps("bench.yaml", closure.env_closure("bench.yaml"))
    assert len(problems) == 1 and "lacks scipy" in problems[0] and "run_bench" in problems[0]


PIP = [sys.executable, "-m", "pip"]


@pytest.fixture(scope="module")
def env_venvs(root, tmp_path_factory) -> dict:
    """env -> (a fresh venv with the env's pip part installed, pip's exit code and stderr).

    The four installs run at once (they wait mostly on downloads and unpacking), without
    compiling bytecode (the imports below compile what they load)."""
    from concurrent.futures import ThreadPoolExecutor

    if not pypi_reachable():
        pytest.skip("needs the network (PyPI) to install the env's packages")
    base = tmp_path_factory.mktemp("env-venvs")

    def install(env: str):
        venv = base / env.removesuffix(".yaml")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        reqs = base / f"{env}.txt"
        reqs.write_text("\n".join(closure.env_pip_part((root / "envs" / env).read_text())))
        if not reqs.read_text().strip():
            return venv, 0, ""
        target = ["--python", str(venv / "bin" / "python")]
        proc = subprocess.run(
            [*PIP, *target, "install", "-q", "--no-compile", "--require-hashes", "-r", str(reqs)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PIP_RETRIES": "0"},  # an index that is not reachable, once
        )
        return venv, proc.returncode, proc.stderr

    with ThreadPoolExecutor(len(ENVS)) as pool:
        return dict(zip(ENVS, pool.map(install, ENVS), strict=True))


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.parametrize("env", ENVS)
def test_env_installs_alone_and_imports_its_rules(root, env, env_venvs, tmp_path):
    """The env's pip part, hash-checked, into a venv without the host's packages, then every
    module its rules reach (our package's modules and the third-party ones they import, lazily
    imported ones included) imported there with `python -I` (no PYTHONPATH, no user site)."""
    venv, code, stderr = env_venvs[env]
    assert code == 0, stderr[-3000:]
    python = venv / "bin" / "python"
    needed = closure.env_closure(env)
    # modules of a fetched source tree (llama.cpp's converter) are not in any env; the
    # distributions they import are (closure.FROM_FETCHED_TREES), installed and checked above
    fetched = set(closure.FROM_FETCHED_TREES)
    modules = sorted(needed.modules) + sorted(needed.third_party - fetched)
    probe = (
        "import importlib, importlib.util, json, sys\n"
        f"by_name = {sorted(needed.by_name)!r}\n"
        f"sys.path.insert(0, {str(root / 'workflow' / 'scripts')!r})\n"
        "failed = {}\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        if name in by_name:  # the code itself only looks it up (find_spec)\n"
        "            assert importlib.util.find_spec(name), 'not found'\n"
        "        else:\n"
        "            importlib.import_module(name)\n"
        "    except Exception as err:\n"
        "        failed[name] = repr(err)\n"
        "open('probe.json', 'w').write(json.dumps({'failed': failed, 'path': sys.path}))\n"
    )
    proc = subprocess.run(
        [str(python), "-I", "-c", probe], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "probe.json").read_text())
    assert result["failed"] == {}
    host_site = [p for p in sys.path if p.endswith("site-packages")]
    assert not set(host_site) & set(result["path"])  # the host's packages were out of reach


def test_slurm_profile_dry_run(root, tmp_path):
    proc = run_snakemake(root, "-n", "--profile", "profiles/slurm", "--directory", str(tmp_path))
    assert "export_mnn_model" in proc.stdout
