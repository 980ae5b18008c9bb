"""The instruction mix checked against arithmetic: the SME outer products the workflow counts
in one KleidiAI kernel, and the number its tile says it must execute (issue 66's validation).

    python benchmarks/instruction_mix_check.py [--workdir DIR]

One int4 MatMulNBits (block 32, accuracy level 4: what genai's builder writes) of M rows, K
inputs and N outputs runs in ONNX Runtime 1.32.0's aarch64 wheel (pinned, sha256-checked) on
the workflow's emulated device (QEMU 11 in the pinned arm64 userland of
config/emulated-sme2.yaml) at a streaming vector length of SVL bits, profiled by the workflow's
own QEMU profiler (QemuDevice.profile: executed blocks per function, each block's instructions
by class, mnnrepro.devices.instruction_mix). For M > 1 ONNX Runtime runs KleidiAI's
`matmul_clamp_f32_qai8dxp1vlx4_qsi4c32p4vlx4_1vlx4vl_sme2_mopa`: an output tile of 1 x 4
vector lengths of 32-bit lanes (L = SVL / 32 rows, 4L columns, the four ZA tiles), and each
SMOPA adds the products of 4 int8 values of K into one L x L tile. So the kernel must execute

    ceil(M / L) * ceil(N / 4L) * ceil(K / 4) * 4   SMOPA instructions,

whatever the kernel's loop structure; the workflow's count of `sme_outer_product` in that
kernel's function is compared with it, shape by shape and vector length by vector length
(shapes that are and are not multiples of the tile). Writes
benchmarks/results/instruction_mix_check.{json,md}.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ort_kleidiai import RUN, emulated, matmul_model, wheel_sites, work_directory
from provenance import write_results

KERNEL = "kai_kernel_matmul_clamp_f32_qai8dxp1vlx4_qsi4c32p4vlx4_1vlx4vl_sme2_mopa"
SHAPES = [(64, 64, 64), (20, 100, 96), (7, 300, 256)]  # (M, N, K): on and off the tile
VECTOR_BITS = (128, 256, 512, 1024, 2048)


def expected_outer_products(m: int, n: int, k: int, bits: int) -> int:
    lanes = bits // 32
    return math.ceil(m / lanes) * math.ceil(n / (4 * lanes)) * math.ceil(k / 4) * 4


def measure(work: Path, site: Path, shape: tuple[int, int, int], device, bits: int) -> dict:
    """The workflow's profile of one MatMulNBits run on device (SME2 at `bits`): the kernel's
    rows, and every row's sum."""
    m, n, k = shape
    model, inputs = matmul_model(work, k=k, n=n, rows=m)
    script = work / "run.py"
    script.write_text(RUN)
    # ONNX Runtime's Python module holds its own copy of the runtime (genai, and the C API
    # tool, load libonnxruntime.so instead)
    (library,) = (site / "onnxruntime" / "capi").glob("onnxruntime_pybind11_state*.so")
    argv = [device.userland["python"], str(script), str(model), "0", str(inputs)]
    argv.append(str(work / "y.npy"))
    env = {"PYTHONPATH": f"{site}:{device.site_dirs()[0]}"}
    result, profile = device.profile(argv, 900, env, {library.name: str(library)}, 0)
    if not result.ok:
        raise RuntimeError(f"M={m} N={n} K={k} at {bits} bits: {result.stderr[-2000:]}")
    rows = [r for r in profile["rows"] if r["symbol"] == KERNEL]
    counted = sum(r["instructions"]["sme_outer_product"] for r in rows)
    everywhere = sum(r["instructions"]["sme_outer_product"] for r in profile["rows"])
    return {
        "M": m,
        "N": n,
        "K": k,
        "vector_bits": bits,
        "expected": expected_outer_products(m, n, k, bits),
        "counted_in_kernel": counted,
        "counted_everywhere": everywhere,
        "kernel_blocks": sum(r["count"] for r in rows),
        "unlogged_blocks": sum(r["unlogged_blocks"] for r in profile["rows"]),
    }


def markdown(result: dict) -> list[str]:
    cells = result["cells"]
    agree = sum(c["expected"] == c["counted_in_kernel"] for c in cells)
    lines = [
        "# The instruction mix against KleidiAI's tile arithmetic "
        "(benchmarks/instruction_mix_check.py)",
        "",
        f"Command: `python benchmarks/instruction_mix_check.py`. Kernel: `{KERNEL}` in "
        "onnxruntime 1.32.0's aarch64 wheel, one int4 MatMulNBits (block 32, accuracy level 4) "
        "per cell, profiled by the workflow's QEMU profiler. Expected SMOPA count: "
        "ceil(M/L) * ceil(N/4L) * ceil(K/4) * 4 with L = SVL/32.",
        "",
        f"The count equals the arithmetic in {agree} of {len(cells)} cells.",
        "",
        "| M | N | K | SVL (bits) | expected SMOPA | counted in the kernel | counted anywhere "
        "| kernel blocks executed | unlogged blocks |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c['M']} | {c['N']} | {c['K']} | {c['vector_bits']} | {c['expected']} | "
            f"{c['counted_in_kernel']} | {c['counted_everywhere']} | {c['kernel_blocks']} | "
            f"{c['unlogged_blocks']} |"
        )
    return lines


def main() -> None:
    with work_directory(__doc__.splitlines()[0]) as work:
        site = wheel_sites(work)["aarch64"]
        cells = []
        for bits in VECTOR_BITS:  # one device per length: it finds the mapping once
            device = emulated(work, f"max,sme-default-vector-length={bits // 8}")
            for shape in SHAPES:
                cells.append(measure(work, site, shape, device, bits))
                print(cells[-1], flush=True)
    result = {"kernel": KERNEL, "cells": cells}
    write_results("instruction_mix_check", result, markdown(result))
    print("\n".join(markdown(result)))


if __name__ == "__main__":
    main()
