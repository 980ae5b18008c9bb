"""Bisection of an engine's source through the workflow's own rules.

    python -m mnnrepro.plan.bisect CONFIG --engine NAME --good REF --bad REF \\
        --target results/engines/{engine_key}/build.json --bad-if 'EXPRESSION' [--cores N]

The engine's source (`engines.<name>.build.source`, else `<tree>.source`: `git`, a URL or a
local repository, or `path`, a local checkout) is mirrored once, bare, into the working
directory's resources/bisect/; `git bisect` walks the mirror (no checkout is touched). At
each commit it tries, the config is the given one with that source pinned to the commit,
fetched from the mirror; Snakemake makes the target with the workflow's rules (the same
fetch, cached builds, gate and benchmark a run uses; a commit already tried reuses its
outputs), and EXPRESSION decides: true = bad. EXPRESSION is Python over `data`, the target
read as JSON (a dict) or CSV (a pandas DataFrame), e.g. `data["sme2"]["sme2_kernel_count"]
== 0` or `data[data.device == 'qemu-sme2-vl256'].judged.eq('wrong').any()`. A commit the
workflow cannot make the target of (a build that fails) is skipped, as `git bisect skip`
does. The target may name `{engine_key}` (the engine's results folder at that commit) and
`{experiment}`.

Every step is written as it ends (`--output`, default results/bisect/<engine>.json): the
commit, its subject, good / bad / skip, the target file with its sha256, what the expression
gave, Snakemake's exit code and, where it failed, the end of its output; then the first bad
commit. The workflow's rules do the work: a step is as reproducible as a run.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

from mnnrepro.config import ConfigError
from mnnrepro.engines.registry import kind_of_spec
from mnnrepro.errors import ReproError
from mnnrepro.files import sha256_file, write_json
from mnnrepro.plan.plan import plan_of
from mnnrepro.toolchain.source import git as source_git

BISECT_DIR = Path("resources/bisect")


class BisectError(ReproError, RuntimeError):
    pass


def git(repo: Path, *args: str) -> str:
    """git in the mirror (toolchain/source.git: a failure raises, naming the command)."""
    return source_git(*args, cwd=repo)


def source_of(config: dict, engine: str) -> tuple[str, ...]:
    """Where the engine's source is configured: (`engines`, name, key, `source`) for an engine
    that names its own, else (its tree's section, `source`)."""
    if engine not in config.get("engines", {}):
        raise ConfigError(f"--engine {engine!r}: not an engine of the config")
    spec = config["engines"][engine]
    kind = kind_of_spec(spec)
    if not kind.from_source:
        raise ConfigError(f"--engine {engine!r}: a {kind.kind} engine is not built from source")
    if "source" in spec[kind.config_key]:
        return ("engines", engine, kind.config_key, "source")
    return (kind.config_section, "source")


def repository(config: dict, where: tuple[str, ...]) -> str:
    """The git repository the engine's source comes from: its `git` (a URL or a local
    repository) or its `path` (a local checkout: its history is walked, its files untouched)."""
    source = config
    for key in where:
        source = source.get(key, {})
    found = source.get("git") or source.get("path")
    if not found:
        raise ConfigError(
            f"config key `{'.'.join(where)}`: bisection walks a git repository (`git` or a "
            "local checkout's `path`); an archive has no history"
        )
    return str(Path(found).expanduser().resolve()) if "git" not in source else found


def pinned(config: dict, where: tuple[str, ...], repo: Path, commit: str) -> dict:
    """The config with the engine's source at `commit` of the bisection's mirror (fetched by
    commit like any git source; the mirror serves any commit it holds, a local checkout
    need not be configured to)."""
    out = copy.deepcopy(config)
    parent = out
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = {"git": f"file://{repo.resolve()}", "commit": commit}
    return out


def load_target(path: Path):
    if path.suffix == ".csv":
        # heavy: a bisection's tables only, not every plan
        import pandas as pd

        return pd.read_csv(path)
    return json.loads(path.read_text(encoding="utf-8"))


def judge(expression: str, path: Path) -> bool:
    """Whether the expression holds (= bad) for the target's data."""
    # heavy: a bisection's tables only, not every plan
    import pandas as pd

    # the user's own predicate, on their own machine (like `git bisect run`'s script)
    data = load_target(path)
    value = eval(expression, {"__builtins__": __builtins__, "pd": pd}, {"data": data})
    return bool(value)


def try_commit(args, config: dict, where: tuple, commit: str, repo: Path, root: Path) -> dict:
    """Make the target at `commit` with the workflow's rules and judge it: one step."""
    step_config = BISECT_DIR / f"{args.engine}-{commit[:12]}.yaml"
    at_commit = pinned(config, where, repo, commit)
    write_yaml(step_config, at_commit)
    plan = plan_of(at_commit, step_config, root)
    target = Path(
        args.target.format(
            engine_key=plan.engine_keys[args.engine], experiment=plan.experiment.results_key
        )
    )
    command = [  # the target first: --configfile takes every word after it
        sys.executable,
        "-m",
        "snakemake",
        str(target),
        "--snakefile",
        str(root / "Snakefile"),
        "--cores",
        str(args.cores),
        "--configfile",
        str(step_config),
    ]
    start = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    outcome = {
        "commit": commit,
        "subject": git(repo, "log", "-1", "--format=%s", commit),
        "config": str(step_config),
        "command": command,
        "returncode": proc.returncode,
        "seconds": round(time.monotonic() - start, 1),
        "target": str(target),
    }
    if proc.returncode != 0 or not target.is_file():
        tail = (proc.stdout + proc.stderr)[-3000:]
        return {
            **outcome,
            "verdict": "skip",
            "why": "the workflow could not make the target",
            "log_tail": tail,
        }
    bad = judge(args.bad_if, target)
    return {
        **outcome,
        "target_sha256": sha256_file(target),
        "bad_if": bad,
        "verdict": "bad" if bad else "good",
    }


def write_yaml(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.part")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    tmp.replace(path)


def mirror(url: str, engine: str) -> Path:
    """A bare mirror of the source repository (made once, updated on a rerun)."""
    repo = BISECT_DIR / f"{engine}.git"
    if repo.is_dir():
        git(repo, "remote", "update", "--prune")
    else:
        repo.parent.mkdir(parents=True, exist_ok=True)
        source_git("clone", "--quiet", "--mirror", url, str(repo))
        git(repo, "config", "uploadpack.allowAnySHA1InWant", "true")  # fetched by commit
    return repo


def bisect_step(repo: Path, verdict: str) -> str:
    """`git bisect good|bad|skip`: what it says (it exits non-zero once only skipped commits
    are left, which is an answer, not an error)."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "bisect", verdict], capture_output=True, text=True, check=False
    )
    said = proc.stdout + proc.stderr
    if proc.returncode != 0 and "only 'skip'ped commits left" not in said:
        raise BisectError(f"git bisect {verdict}: {said.strip()}")
    return said


def bisect(args, root: Path) -> dict:
    config_path = Path(args.config)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    where = source_of(config, args.engine)
    url = repository(config, where)
    repo = mirror(url, args.engine)
    good, bad = (
        git(repo, "rev-parse", "--verify", f"{r}^{{commit}}") for r in (args.good, args.bad)
    )
    output = Path(args.output or f"results/bisect/{args.engine}.json")
    result = {
        "engine": args.engine,
        "source_key": ".".join(where),
        "repository": url,
        "config": str(config_path),
        "good": good,
        "bad": bad,
        "target": args.target,
        "bad_if": args.bad_if,
        "steps": [],
        "first_bad_commit": None,
    }
    subprocess.run(["git", "-C", str(repo), "bisect", "reset"], capture_output=True, check=False)
    git(repo, "bisect", "start", "--no-checkout", bad, good)
    try:
        while True:
            commit = git(repo, "rev-parse", "BISECT_HEAD")
            step = try_commit(args, config, where, commit, repo, root)
            result["steps"].append(step)
            write_json(output, result)
            print(f"{commit[:12]} {step['verdict']}: {step['subject']}", flush=True)
            said = bisect_step(repo, step["verdict"])
            if "is the first bad commit" in said:
                first = said.split()[0]
                result["first_bad_commit"] = {
                    "commit": first,
                    "subject": git(repo, "log", "-1", "--format=%s", first),
                }
                break
            if "only 'skip'ped commits left" in said:
                result["undecided"] = said
                break
    finally:
        subprocess.run(
            ["git", "-C", str(repo), "bisect", "reset"], capture_output=True, check=False
        )
    write_json(output, result)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", help="the experiment's config file")
    parser.add_argument("--engine", required=True, help="the engine whose source is bisected")
    parser.add_argument(
        "--good", required=True, help="a commit or ref where the predicate is false"
    )
    parser.add_argument("--bad", required=True, help="a commit or ref where it is true")
    parser.add_argument("--target", required=True, help="the output the predicate reads")
    parser.add_argument("--bad-if", required=True, help="Python over `data`: true = bad")
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--output", default="", help="default: results/bisect/<engine>.json")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[4]  # the repository: plan, mnnrepro, scripts, workflow
    try:
        result = bisect(args, root)
    except ReproError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    first = result["first_bad_commit"]
    if first is None:
        print("no single first bad commit (skipped commits left): see the output", file=sys.stderr)
        return 1
    print(f"first bad commit: {first['commit']} {first['subject']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
