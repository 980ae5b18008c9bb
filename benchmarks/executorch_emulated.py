"""ExecuTorch with XNNPACK as a fourth SME2 stack, end to end by hand before it is an engine
kind (issue 78 item 3): does the path the kind would take work here, and do XNNPACK's SME2
kernels run on an emulated SME2 CPU, and not under the SME mask?

Usage: python benchmarks/executorch_emulated.py [--workdir DIR]

1. Wheels, sha256-pinned from PyPI (mnnrepro.fetch) and unpacked into one tree put on
   PYTHONPATH, nothing installed: ExecuTorch 1.5.1 for x86-64 and linux-arm64
   (benchmarks/executorch_wheel.py reads what they hold), and what its exporter imports beyond
   this project's lock (torchao 0.18.0, ruamel.yaml, tabulate, flatbuffers).
2. The project's synthetic tiny Qwen3 (models/synthetic.make_model, seed 0) exported by
   ExecuTorch's own tools in this project's environment (torch 2.13 CPU, transformers):
   benchmarks/executorch_export.py.
3. A C++ runner on each wheel's headers and libraries (no torch): this host's c++ and
   Debian's aarch64-linux-gnu-g++. A 16-token prompt, then 4 greedy steps.
4. Runs: this host; QEMU without SME; QEMU with SME2 at 512 bits, by default and with the SME
   mask preloaded (toolchain/sme_mask, built by tools.build_sme_mask with the cross
   compiler). QEMU and the arm64 userland come from the workflow's own rule
   (fetch_emulation_userland, config/emulated-sme2.yaml's pins). Each emulated run logs the
   blocks QEMU translates (-d in_asm): SME instructions among them (smstart, outer products,
   operands on ZA) say whether SME code ran. Emulated times are recorded, not speeds.
Writes benchmarks/results/executorch_emulated.{md,json}.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from executorch_wheel import PYPI, WHEELS, in_workdir, tool  # noqa: E402
from provenance import write_results  # noqa: E402
from real_mnn import snakemake  # noqa: E402

from mnnrepro.fetch import download  # noqa: E402
from mnnrepro.files import sha256_file  # noqa: E402
from mnnrepro.models.synthetic import make_model  # noqa: E402
from mnnrepro.toolchain.tools import build_sme_mask  # noqa: E402
from mnnrepro.unpack import extract_zip_into  # noqa: E402

EXPORTER_WHEELS = {  # what ExecuTorch's exporter imports beyond the lock: PyPI's files
    "torchao": (
        f"{PYPI}/c4/4d/485477bb8f05bd501016059c6d8abd742f830cb1b24ab7704e086c7cc35a/"
        "torchao-0.18.0-py3-none-any.whl",
        "5c2b4485341bf28b7fed2c4fc95b9f298e209f41685350f067de85527a05585e",
    ),
    "ruamel.yaml": (
        f"{PYPI}/b8/0c/51f6841f1d84f404f92463fc2b1ba0da357ca1e3db6b7fbda26956c3b82a/"
        "ruamel_yaml-0.19.1-py3-none-any.whl",
        "27592957fedf6e0b62f281e96effd28043345e0e66001f97683aa9a40c667c93",
    ),
    "tabulate": (
        f"{PYPI}/99/55/db07de81b5c630da5cbf5c7df646580ca26dfaefa593667fc6f2fe016d2e/"
        "tabulate-0.10.0-py3-none-any.whl",
        "f0b0622e567335c8fabaaa659f1b33bcb6ddfe2e496071b743aa113f8774f2d3",
    ),
    "flatbuffers": (
        f"{PYPI}/e8/2d/d2a548598be01649e2d46231d151a6c56d10b964d94043a335ae56ea2d92/"
        "flatbuffers-25.12.19-py2.py3-none-any.whl",
        "7634f50c427838bb021c2d66a3d1168e9d199b0607e6329399f04846d42e20b4",
    ),
}
CPUS = {  # as config/emulated-sme2.yaml's devices
    "qemu-no-sme": "max,sme=off",
    "qemu-sme2-vl512": "max,sme-default-vector-length=64",
}
STEP = re.compile(r"step (\d+): (\d+) tokens, ([\d.]+) ms, next (\d+)")
SME = re.compile(r"\b(smstart|smstop|\w*mopa|\w*mops)\b|\bza(\d|[hv]|\b|\[)|\bzt0\b")
RUNNER = r"""// Times a prompt of 16 token ids (0..15) and 4 greedy steps, each a whole forward.
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <chrono>
#include <cstdio>
#include <vector>
int main(int argc, char** argv) {
  executorch::extension::Module module(argv[1]);
  std::vector<int64_t> ids;
  for (int i = 0; i < 16; ++i) ids.push_back(i);
  for (int step = 0; step < 5; ++step) {
    auto input = executorch::extension::from_blob(
        ids.data(), {1, (int)ids.size()}, executorch::aten::ScalarType::Long);
    auto t0 = std::chrono::steady_clock::now();
    auto result = module.forward(input);
    auto t1 = std::chrono::steady_clock::now();
    if (!result.ok()) {
      std::fprintf(stderr, "forward failed: %d\n", (int)result.error());
      return 1;
    }
    const auto& out = result->at(0).toTensor();
    const float* last = out.const_data_ptr<float>() + (size_t)(ids.size() - 1) * out.size(2);
    int best = 0;
    for (int v = 1; v < out.size(2); ++v) if (last[v] > last[best]) best = v;
    std::printf("step %d: %zu tokens, %.3f ms, next %d\n", step, ids.size(),
                std::chrono::duration<double, std::milli>(t1 - t0).count(), best);
    ids.push_back(best);
  }
}
"""


def unpacked(wheels: dict, workdir: Path, tree: Path) -> Path:
    """The wheels downloaded (verified) and unpacked into one tree."""
    for url, sha256 in wheels.values():
        wheel = download(url, workdir / "wheels" / Path(url).name, sha256)
        marker = tree / f".{Path(url).name}"
        if not marker.exists():
            extract_zip_into(wheel, tree)
            marker.touch()
    return tree


def export(workdir: Path) -> dict:
    """The tiny synthetic Qwen3 and its ExecuTorch program (export tree on PYTHONPATH)."""
    checkpoint = workdir / "synth-tiny"
    if not (checkpoint / "config.json").exists():
        make_model("tiny", 0, checkpoint)
    x86 = {"executorch": WHEELS["x86-64"], **EXPORTER_WHEELS}
    tree = unpacked(x86, workdir, workdir / "export-tree")
    program = workdir / "synth-tiny.pte"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks/executorch_export.py"),
            str(checkpoint),
            str(program),
        ],
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the export failed:\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**result, "program": program, "sha256": sha256_file(program)}


def compiled_runner(platform: str, workdir: Path) -> tuple[Path, Path]:
    """(the runner built on the platform's wheel, the wheel's library folder)."""
    wheel = unpacked({"executorch": WHEELS[platform]}, workdir, workdir / f"runtime-{platform}")
    et = wheel / "executorch"
    source = workdir / "et_runner.cpp"
    source.write_text(RUNNER)
    compiler = "aarch64-linux-gnu-g++" if platform == "linux-arm64" else "c++"
    out = workdir / f"et_runner-{platform}"
    subprocess.run(
        [
            compiler,
            "-std=c++17",
            "-O2",
            f"-I{et}/include",
            f"-I{et}/include/executorch/runtime/core/portable_type/c10",
            "-DC10_USING_CUSTOM_GENERATED_MACROS",
            str(source),
            "-o",
            str(out),
            f"-L{et}/lib",
            "-Wl,--no-as-needed",
            "-lexecutorch",
            "-lexecutorch_backend_xnnpack",
            "-lexecutorch_kernels_optimized",
            "-lexecutorch_threadpool",
        ],
        check=True,
    )
    return out, et / "lib"


def steps(output: str) -> list[dict]:
    return [
        {"tokens": int(m[2]), "ms": float(m[3]), "next": int(m[4])}
        for m in (STEP.match(line) for line in output.splitlines())
        if m
    ]


def run(argv: list[str], env: dict | None = None) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"$ {' '.join(argv)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def emulated(cpu: str, runner: Path, lib: Path, program: Path, workdir: Path, mask=None) -> dict:
    """One run under QEMU with its translated blocks logged: the steps and the SME
    instructions QEMU translated (each block once)."""
    emulation = workdir / "resources" / "emulation"
    blocks = workdir / f"blocks-{cpu}-{'masked' if mask else 'default'}.log"
    preload = ["-E", f"LD_PRELOAD={mask}"] if mask else []
    argv = [
        str(emulation / "qemu/usr/bin/qemu-aarch64"),
        "-cpu",
        cpu,
        "-L",
        str(emulation / "sysroot"),
    ]
    argv += ["-E", f"LD_LIBRARY_PATH={lib}", *preload, "-d", "in_asm", "-D", str(blocks)]
    output = run([*argv, str(runner), str(program)])
    sme = [line for line in blocks.read_text(errors="replace").splitlines() if SME.search(line)]
    blocks.unlink()
    return {"steps": steps(output), "sme_instructions_translated": len(sme)}


def measure(workdir: Path) -> dict:
    for name in ("readelf", "nm", "objdump (arm64)"):
        tool(name)
    exported = export(workdir)
    snakemake(workdir, "config/emulated-sme2.yaml", None, 1, "resources/emulation/userland.json")
    mask_dir = workdir / "sme-mask"
    with open(workdir / "sme-mask.log", "w") as log:
        build_sme_mask("linux-arm64", None, str(workdir / "sme-mask-build"), str(mask_dir), log)
    (mask,) = mask_dir.glob("*.so")
    host_runner, host_lib = compiled_runner("x86-64", workdir)
    arm_runner, arm_lib = compiled_runner("linux-arm64", workdir)
    program = exported.pop("program")
    env = {**os.environ, "LD_LIBRARY_PATH": str(host_lib)}
    runs = {"host (x86-64)": {"steps": steps(run([str(host_runner), str(program)], env))}}
    for name, cpu in CPUS.items():
        runs[f"{name}, default"] = emulated(cpu, arm_runner, arm_lib, program, workdir)
    runs["qemu-sme2-vl512, SME mask"] = emulated(
        CPUS["qemu-sme2-vl512"], arm_runner, arm_lib, program, workdir, mask
    )
    return {"export": exported, "runs": runs}


def markdown(result: dict) -> list[str]:
    exported, runs = result["export"], result["runs"]
    lines = [
        "# ExecuTorch with XNNPACK on emulated SME2 CPUs, by hand",
        "",
        "`python benchmarks/executorch_emulated.py`: the synthetic tiny Qwen3 (seed 0) exported "
        "by ExecuTorch 1.5.1's own tools (torchao int4 weights in groups of 32, dynamic int8 "
        "activations, the XNNPACK partitioner; no KV cache) in this project's environment with "
        "the pinned wheels on PYTHONPATH; a C++ runner on each pinned wheel's libraries; QEMU "
        "and the arm64 userland from the workflow's fetch rule.",
        "",
        f"- The program: {exported['bytes']:,} bytes, sha256 `{exported['sha256']}`, "
        f"{exported['delegated_calls']} calls delegated to XNNPACK; outside it: "
        + ", ".join(f"`{op}`" for op in exported["outside_xnnpack"]),
        f"- Eager (quantized) PyTorch's next token after the prompt 0..15: "
        f"{exported['eager_next_token']}",
        "",
        "| run | next tokens (greedy, 5 calls) | SME instructions QEMU translated | ms per call |",
        "|---|---|---|---|",
    ]
    for name, run_ in runs.items():
        tokens = ", ".join(str(s["next"]) for s in run_["steps"])
        ms = ", ".join(f"{s['ms']:.1f}" for s in run_["steps"])
        sme = run_.get("sme_instructions_translated", "- (x86-64)")
        lines.append(f"| {name} | {tokens} | {sme} | {ms} |")
    lines += [
        "",
        "SME instructions: the translated blocks' lines naming smstart/smstop, an outer product "
        "(`*mopa`, `*mops`) or the ZA array (each block is translated once, so this counts the "
        "SME code reached, not how often it ran). Emulated times are not speeds.",
    ]
    return lines


def main() -> None:
    result = in_workdir(__doc__.split("\n")[0], measure)
    write_results("executorch_emulated", result, markdown(result))
    print("\n".join(markdown(result)))


if __name__ == "__main__":
    main()
