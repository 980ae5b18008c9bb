"""ONNX Runtime GenAI for a phone: what the pinned Android libraries carry, and whether the
models its builder writes are ones its runtime reads (issue 62's Android route).

    python benchmarks/ort_android.py [--workdir DIR]

Everything here is real and runs on this x86 machine (no phone, no NDK):

* the workflow's own fetch of `ort_genai.aars.android-arm64` (the schema's default pins:
  onnxruntime-android 1.29.0 and onnxruntime-genai-android 0.15.2, the AARs of asus4's Unity
  packages on npm, and the genai 0.15.2 wheel whose model builder converts the models):
  downloaded by sha256, the arm64-v8a libraries unpacked, read from their bytes (KleidiAI's
  kernel names, `mlas.disable_kleidiai`), the KleidiAI kernels the attribution names in the
  stripped library from its kernel tables (devices/stripped.py, as simpleperf's samples on a
  phone would be attributed), and genai's library's exported functions against the C API
  functions ort_genai_tool declares (engines/ort_genai/gate_tool/oga_api.h: a missing one would
  fail the tool's link on the phone's toolchain);
* the models: the workflow's tiny synthetic Qwen3 and Qwen3-VL checkpoints (seed 0; the VL
  one's language model, as models/language_model.py gives it to the builder) converted by the
  Android route's builder (genai 0.15.2) and by the host's (genai 0.18.0, the builder of a
  config that also has a wheel engine), each run text-only through genai's Python API in
  PyPI's x86_64 wheels of the AARs' own versions (onnxruntime 1.29.0, genai 0.15.2: the same
  sources built for another platform): 8 greedy tokens after a 10-token prompt.

Writes benchmarks/results/ort_android.{json,md}.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from ort_kleidiai import FILES, work_directory  # noqa: E402
from provenance import write_results  # noqa: E402

from mnnrepro.config import load_schema  # noqa: E402
from mnnrepro.devices.elf import read_symbols  # noqa: E402
from mnnrepro.engines.ort_genai.c_api_runner import TOOL_SOURCE as ORT_GENAI_TOOL_SOURCE  # noqa: E402
from mnnrepro.engines.ort_genai.fetch import fetch_ort_genai, genai_library  # noqa: E402
from mnnrepro.engines.ort_genai.onnx_genai import convert  # noqa: E402
from mnnrepro.fetch import download  # noqa: E402
from mnnrepro.models.synthetic import make_model  # noqa: E402
from mnnrepro.unpack import extract_zip_into  # noqa: E402

# the AARs' versions as PyPI's x86_64 wheels (PyPI's simple index, 2026-12-05): the runtime
# the Android route's models are checked in here
RUNTIME = {
    "onnxruntime-1.29.0": (
        f"{FILES}/3b/91/a66cd77f28379ede419672edda3184f1eb286db215dce1e7b976fae2d63b/"
        "onnxruntime-1.29.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "85f8e8406c52658735fe5c7fbfd3ebaa1ed340768324f6252e4274e374580a23",
    ),
    "onnxruntime_genai-0.15.2": (
        f"{FILES}/5d/b8/5e45acb14c7f8a71690877f531a9a25ee2ec82f08e0824b7939eb19a7f12/"
        "onnxruntime_genai-0.15.2-cp311-cp311-manylinux_2_28_x86_64.whl",
        "42ce44e7acca699af4b64001c2fabdcf87406b231a598c964c724a1caf68c147",
    ),
}
PROMPT = [5, 17, 300, 2, 99, 1000, 42, 7, 64, 3]
# the int4 GEMM of a prefill and the GEMV of a decode step that KleidiAI ran in the emulated
# SME2 CPU (tests/workflow/test_ort.py's PREFILL_KERNEL, DECODE_KERNEL)
SEEN_RUNNING = (
    "kai_kernel_matmul_clamp_f32_qai8dxp1vlx4_qsi4c32p4vlx4_1vlx4vl_sme2_mopa",
    "kai_kernel_matmul_clamp_f32_qai8dxp1x4_qsi4c32p4vlx4_1x4vl_sme2_dot",
)
GENERATE = """
import json, sys, onnxruntime_genai as og
model = og.Model(sys.argv[1])
params = og.GeneratorParams(model)
params.set_search_options(max_length=len(json.loads(sys.argv[2])) + 8, do_sample=False)
generator = og.Generator(model, params)
generator.append_tokens(json.loads(sys.argv[2]))
tokens = []
while not generator.is_done():
    generator.generate_next_token()
    tokens.append(int(generator.get_next_tokens()[0]))
print(json.dumps({"version": og.__version__, "tokens": tokens}))
"""


def pins() -> dict:
    """The schema's default pins: the Android route's, and the host's wheels."""
    ort = load_schema()["properties"]["ort_genai"]["properties"]
    return {
        "aars": ort["aars"]["default"]["android-arm64"],
        "host": ort["wheels"]["default"]["host"],
    }


def declared_functions() -> list[str]:
    header = (ORT_GENAI_TOOL_SOURCE / "oga_api.h").read_text()
    return sorted(set(re.findall(r"\b(Oga[A-Za-z]+)\(", header)))


def site_of(work: Path, name: str, wheels: list[tuple[str, str]]) -> Path:
    """A directory holding these wheels unpacked side by side (downloads checked)."""
    site = work / name
    if not site.is_dir():
        for url, sha256 in wheels:
            wheel = download(url, work / "wheels" / url.rsplit("/", 1)[1], sha256)
            extract_zip_into(wheel, site)
    return site


def checkpoints(work: Path) -> dict[str, Path]:
    made = {}
    for shape in ("tiny", "tiny-vl"):
        made[shape] = work / "checkpoints" / shape
        if not (made[shape] / "config.json").is_file():
            make_model(shape, 0, made[shape])
    return made


def model_cells(work: Path, builders: dict[str, Path], runtime: Path) -> list[dict]:
    cells = []
    for shape, checkpoint in checkpoints(work).items():
        for builder, site in builders.items():
            out = work / "models" / f"{shape}-{builder}"
            with (work / f"convert-{shape}-{builder}.log").open("w") as log:
                record = convert(shape, checkpoint, site, out, work / "cache" / shape, log)
            config = json.loads((out / "genai_config.json").read_text())
            argv = [sys.executable, "-c", GENERATE, str(out), json.dumps(PROMPT)]
            env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(runtime)}
            done = subprocess.run(argv, env=env, capture_output=True, text=True)
            ran = json.loads(done.stdout) if done.returncode == 0 else {}
            cells.append(
                {
                    "checkpoint": shape,
                    "builder": builder,
                    "as": (record.get("language_model") or {}).get("as", "itself"),
                    "type": config["model"]["type"],
                    "runtime": ran.get("version"),
                    "tokens": ran.get("tokens"),
                    "error": "" if ran else done.stderr.strip().splitlines()[-1][:200],
                }
            )
            print(cells[-1], flush=True)
    return cells


def markdown(result: dict) -> list[str]:
    record, lib = result["record"], result["record"]["library"]
    missing = result["missing_functions"]
    held = "held" if "mlas.disable_kleidiai" in lib["session_options"] else "absent"
    lines = [
        "# ONNX Runtime GenAI for a phone: the pinned Android libraries",
        "",
        "`python benchmarks/ort_android.py`: the workflow's fetch of `ort_genai.aars."
        f"android-arm64` (the schema's default pins), {record['pin']}.",
        "",
        "| archive | version | sha256 |",
        "|---|---|---|",
        *(
            f"| {a['file']} ({a['member']}) | {a['version']} | {a['sha256'][:16]}... |"
            for a in record["aars"]
        ),
        f"| {record['builder']['file']} (model builder) | {record['builder']['version']} | "
        f"{record['builder']['sha256'][:16]}... |",
        "",
        f"Unpacked for the phone: {', '.join(result['libraries'])}.",
        "",
        f"{lib['path']}: {len(lib['kleidiai_kernels'])} KleidiAI kernel names, "
        f"{len(lib['sme2_kernels'])} of them SME2, {len(lib['sme_kernels'])} SME; "
        f"`mlas.disable_kleidiai` {held}; "
        f"{len(lib['session_options'])} session options in all. The attribution names "
        f"{len(result['named_sme2_kernels'])} SME2 kernel bodies in it from its kernel tables; "
        "the prefill GEMM and the decode GEMV KleidiAI ran on the emulated SME2 CPU are "
        + ("among them." if result["seen_running_named"] else "NOT among them."),
        "",
        f"{result['genai_library']}: exports {len(result['declared_functions']) - len(missing)} of "
        f"the {len(result['declared_functions'])} C API functions ort_genai_tool declares"
        + (f"; missing: {', '.join(missing)}." if missing else " (all)."),
        "",
        "Each model converted on this host and run text-only (8 greedy tokens after a "
        f"{len(PROMPT)}-token prompt) through genai's Python API in PyPI's x86_64 wheels of the "
        "AARs' versions:",
        "",
        "| checkpoint | builder | given as | genai type | runtime | tokens |",
        "|---|---|---|---|---|---|",
    ]
    for c in result["models"]:
        tokens = " ".join(map(str, c["tokens"])) if c["tokens"] else f"failed: {c['error']}"
        lines.append(
            f"| {c['checkpoint']} | genai {c['builder']} | {c['as']} | {c['type']} | "
            f"{c['runtime']} | {tokens} |"
        )
    return lines


def main() -> None:
    pinned = pins()
    with work_directory(__doc__.splitlines()[0]) as work:
        record = fetch_ort_genai("android-arm64", pinned["aars"], work / "cache", work / "android")
        library = work / "android" / genai_library(record)
        exported = set(read_symbols(library).names)
        named = read_symbols(work / "android" / record["library"]["path"]).names
        kernels = sorted({n for n in named if n.startswith("kai_kernel_") and "_sme2_" in n})
        declared = declared_functions()
        host = site_of(work, "host-0.18.0", [(p["url"], p["sha256"]) for p in pinned["host"]])
        runtime = site_of(work, "runtime-0.15.2", list(RUNTIME.values()))
        builders = {"0.15.2 (the AAR's)": work / "android", "0.18.0 (the host's)": host}
        result = {
            "record": {k: v for k, v in record.items() if k != "files"},
            "libraries": sorted(f["path"] for f in record["files"] if f["path"].startswith("lib/")),
            "genai_library": genai_library(record),
            "named_sme2_kernels": kernels,
            "seen_running_named": all(k in kernels for k in SEEN_RUNNING),
            "declared_functions": declared,
            "missing_functions": sorted(set(declared) - exported),
            "models": model_cells(work, builders, runtime),
        }
    write_results("ort_android", result, markdown(result))
    print("\n".join(markdown(result)))


if __name__ == "__main__":
    main()
