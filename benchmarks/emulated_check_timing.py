"""Time the small emulated SME2 check that CI runs (tiny model, host + QEMU without SME + two
SME vector lengths): the pinned fetch of QEMU and the arm64 userland, then the workflow.

Usage: python benchmarks/emulated_check_timing.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import write_results  # noqa: E402

OUT = ROOT / "benchmarks" / "results"
KEEP = ["host", "qemu-no-sme", "qemu-sme2-vl256", "qemu-sme2-vl512"]  # as the CI test


def snakemake(workdir: Path, config: Path, *targets: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "2",
            "--configfile",
            str(config),
            "--directory",
            str(workdir),
            *targets,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def main() -> int:
    workdir = Path(tempfile.mkdtemp(prefix="emulated-timing-"))
    cfg = yaml.safe_load((ROOT / "config/emulated-sme2.yaml").read_text())
    cfg["devices"] = {name: cfg["devices"][name] for name in KEEP}
    cfg["models"] = {"synth-tiny": cfg["models"]["synth-tiny"]}
    cfg["correctness"]["prompts"] = ["你好"]
    config = workdir / "emulated.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    fetch_s = snakemake(workdir, config, "resources/emulation/userland.json")
    run_s = snakemake(workdir, config)
    result = {"fetch_s": round(fetch_s, 1), "workflow_s": round(run_s, 1), "devices": KEEP}
    write_results(
        "emulated_check_timing",
        result,
        (
            "# Emulated SME2 check (the CI-sized run)\n\n"
            f"Devices: {', '.join(KEEP)}; tiny synthetic model; 2 cores.\n\n"
            f"| step | seconds |\n|---|---:|\n| pinned fetch of QEMU + arm64 userland "
            f"(~110 MB) | {result['fetch_s']} |\n"
            f"| the workflow (all rules) | {result['workflow_s']} |"
        ).splitlines(),
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
