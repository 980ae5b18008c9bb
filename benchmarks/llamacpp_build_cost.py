"""What the control test's llama.cpp build costs: Release, unoptimized, unity build, clang-16.

tests/workflow/config-control.yaml builds its llama.cpp engine for this host with clang-16 and
CMAKE_BUILD_TYPE None (no -O flags) as a unity build (CMAKE_UNITY_BUILD; its batches are
adjusted by engines/llamacpp/llamacpp_unity.cmake: one source that cannot join a batch is compiled
alone, and the core sources llama.cpp leaves out of its batches join them), and its quantizer
flags are the engine's, so that one build holds llama-bench and llama-quantize (the
quantizer is not built again). This builds the same tree (that config's pinned sdist) for
this host each way with the workflow's own function (engines/llamacpp/build.py build_engine), each
with a new, empty compiler cache (as in a test run on a fresh machine). Cost = CPU seconds of
the build processes (user + system, from the children's rusage: the same work whatever else
the machine does); wall time is reported too.

Usage: python benchmarks/llamacpp_build_cost.py [--jobs 2] [--workdir DIR]
Writes benchmarks/results/llamacpp_build_cost.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from provenance import write_results  # noqa: E402

from mnnrepro.devices.base import children_cpu_seconds  # noqa: E402
from mnnrepro.engines.llamacpp.build import build_engine, provide_source  # noqa: E402
from mnnrepro.toolchain.records import BuildJob  # noqa: E402

CONTROL = ROOT / "tests" / "workflow" / "config-control.yaml"
SETTINGS = {  # name: the -D flags of the engine's and the quantizer's build alike
    "Release": {"CMAKE_BUILD_TYPE": "Release"},
    "None": {"CMAKE_BUILD_TYPE": "None"},
    "None, unity build": {"CMAKE_BUILD_TYPE": "None", "CMAKE_UNITY_BUILD": True},
    "None, unity build, clang-16": {
        "CMAKE_BUILD_TYPE": "None",
        "CMAKE_UNITY_BUILD": True,
        "CMAKE_C_COMPILER": "clang-16",
        "CMAKE_CXX_COMPILER": "clang++-16",
    },
}
CONTROL_SETTING = "None, unity build, clang-16"  # the control test's (CONTROL's flags)


def timed(step) -> dict:
    cpu, wall = children_cpu_seconds(), time.perf_counter()
    step()
    return {
        "cpu_s": round(children_cpu_seconds() - cpu, 1),
        "wall_s": round(time.perf_counter() - wall, 1),
    }


def build(source: dict, name: str, flags: dict, work: Path, jobs: int) -> dict:
    """The engine's build (llama-bench and llama-quantize), with a new compiler cache."""
    tag = name.replace(", ", "-").replace(" ", "-")
    os.environ["CCACHE_DIR"] = str(work / f"ccache-{tag}")
    spec = {"platform": "host", "flags": flags}
    dirs = (str(work / f"engine-{tag}"), str(work / f"bin-{tag}"))
    with (work / f"{tag}.log").open("w") as log:
        job = BuildJob("llama", source, spec, *dirs, log, None, jobs)
        return timed(lambda: build_engine(job))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--workdir", default="")
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="llamacpp-build-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    control = yaml.safe_load(CONTROL.read_text())
    if control["engines"]["llama"]["llamacpp"]["flags"] != SETTINGS[CONTROL_SETTING]:
        raise SystemExit(f"{CONTROL}: engines.llama's flags are not {CONTROL_SETTING!r}'s")
    pin = control["llamacpp"]["source"]
    source = provide_source(pin, {}, work / "cache")
    results = {name: build(source, name, f, work, args.jobs) for name, f in SETTINGS.items()}
    cpu = {name: r["cpu_s"] for name, r in results.items()}
    result = {
        "tree": {k: source[k] for k in ("kind", "version", "commit", "sha256")},
        "jobs": args.jobs,
        "settings": {name: {"flags": SETTINGS[name], **r} for name, r in results.items()},
    }
    lines = [
        "# The control test's llama.cpp build: Release, unoptimized, unity build, clang-16",
        "",
        f"`python benchmarks/llamacpp_build_cost.py --jobs {args.jobs}`: llama.cpp "
        f"{source['commit']} (llama-cpp-python {source['version']} sdist, "
        "tests/workflow/config-control.yaml's pin) built for this host with the workflow's own "
        "function: one engine build holding llama-bench and llama-quantize (the quantizer's "
        "flags are the engine's), each setting with a new compiler cache. CPU = user + system "
        "seconds of the build processes.",
        "",
        "| setting | CPU s | wall s |",
        "|---|---:|---:|",
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {r['cpu_s']} | {r['wall_s']} |")
    control = cpu[CONTROL_SETTING]
    lines += [
        "",
        f"The control test's build (unoptimized, unity, clang-16) takes **{control:.0f} "
        f"CPU-seconds**, {control / cpu['Release']:.0%} of Release's and "
        f"{control / cpu['None, unity build']:.0%} of the same build with the host's gcc (its "
        "fallback where clang-16 is not installed), per test run on a fresh machine.",
    ]
    write_results("llamacpp_build_cost", result, lines)


if __name__ == "__main__":
    main()
