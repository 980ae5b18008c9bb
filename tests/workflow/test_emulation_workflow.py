"""The emulated SME2 experiment, small: tiny model, the host, QEMU without SME and with SME2
at 512 bits. It fetches the pinned QEMU and arm64 userland from Debian's archive and PyPI (the
same fetch users run); everything else is offline and real."""

from __future__ import annotations

import json

import pandas as pd
import yaml
from conftest import assert_no_sme2_kernel_ran_without_sme, network_marks, run_snakemake

from mnnrepro.devices.qemu import QemuDevice
from mnnrepro.toolchain.tools import build_sme_mask

pytestmark = network_marks(
    Debian="the emulated device's pinned packages", PyPI="the emulated device's pinned packages"
)
# the host, the fallback CPU and one SME2 vector length (not QEMU's default 256 bits: the
# configured length reaches the process); the vector-length check at another length is
# tests/unit/test_attribution.py's, the whole sweep benchmarks/mnn_vector_length.py's
KEEP = ["host", "qemu-no-sme", "qemu-sme2-vl512"]
# the CPU whose kernels the checks below read (the host's perf profile is
# tests/workflow/test_workflow.py's; on the CPU without SME an SME instruction kills the
# process, so its completed runs show that no SME2 kernel ran there)
PROFILED = ["qemu-sme2-vl512"]


def test_fallback_and_vector_length_checks_and_no_emulated_speedups(root, seed_models, tmp_path):
    cfg = yaml.safe_load((root / "config/emulated-sme2.yaml").read_text())
    cfg["devices"] = {name: cfg["devices"][name] for name in KEEP}
    cfg["models"] = {"synth-tiny": cfg["models"]["synth-tiny"]}  # the VL model: not in CI
    cfg["correctness"]["prompts"] = ["你好"]
    # 8 steps, not 16: every device answers twice (free-running, then fed the reference's
    # tokens) under QEMU; the same code, half the emulated steps
    cfg["correctness"]["max_new_tokens"] = 8
    # emulated timings are recorded, never judged: measure the load and mark it, never wait
    # (a busy CI host), with the shortest load sample; no warm-up invocation, and short
    # phases (every invocation runs under QEMU, a profiled one logging every block)
    cfg["bench"].update(
        quiet_timeout_s=0, quiet_window_s=0.1, warmup=0, prompt_tokens=16, generate_tokens=4
    )
    # profiled: the CPU the kernel checks below read (a QEMU profile runs twice, the second
    # logging every block)
    cfg["attribution"]["devices"] = PROFILED
    config_path = tmp_path / "emulated.yaml"
    config_path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    seed_models(tmp_path, cfg["models"])
    run_snakemake(
        root, "--cores", "2", "--configfile", str(config_path), "--directory", str(tmp_path)
    )
    out = tmp_path / "results" / "emulated-sme2"
    table = pd.read_csv(out / "emulation" / "synth-tiny.csv")
    assert sorted(table["device"].unique()) == sorted(KEEP)
    # every other device was fed the reference device's tokens, every step compared
    reference = cfg["emulation"]["reference"]
    others = table[table["device"] != reference]
    assert others["teacher_forced"].all() and not others.empty
    answered = others[others["crashed"].isna() | (others["crashed"].astype(str) == "")]
    assert (answered["steps_compared"] == answered["tokens"]).all()
    by_device = table.groupby("device").first()
    assert not by_device.loc["qemu-no-sme", "sme2"] and by_device.loc["qemu-sme2-vl512", "sme2"]
    assert by_device.loc["qemu-sme2-vl512", "sme_vector_length_bits"] == 512
    for device in KEEP[1:]:  # the engine itself reports what the emulated CPU offers
        expected = "sme2: 0" if device == "qemu-no-sme" else "sme2: 1"
        assert by_device.loc[device, "engine_line"].endswith(expected)
    bench = pd.read_csv(out / "bench.csv")
    summary = pd.read_csv(out / "summary.csv")
    assert set(bench["device"]) >= {"host", "qemu-no-sme"}  # emulated timings are recorded
    assert set(summary["device"]) == {"host"}  # ... and never enter a speedup or a verdict
    text = (out / "summary.md").read_text()
    assert "## Emulated SME2 checks (QEMU)" in text and "| 512 bits |" in text
    # what ran (attribution): MNN's SME2 kernels executed in prefill on the SME2 CPU; none on
    # the CPU without SME, where an SME instruction kills the process and both variants ran
    # to the end (the same wheel: its dispatch took the NEON path)
    kernels = pd.read_csv(out / "kernels.csv", keep_default_na=False)
    sme2 = kernels[kernels["sme2_kernel"] & kernels["engine_library"]]
    ran = sme2.groupby(["device", "phase"])["count"].sum()
    assert ran.get(("qemu-sme2-vl512", "prefill"), 0) > 0
    assert_no_sme2_kernel_ran_without_sme(tmp_path, cfg, bench)
    engine_code = kernels[kernels["engine_library"]]
    unresolved = engine_code[engine_code["symbol"] == ""]["count"].sum()
    assert unresolved <= 0.01 * engine_code["count"].sum()  # blocks placed in named functions
    assert sorted(kernels["device"].unique()) == PROFILED  # `attribution.devices`
    assert "## Where the time goes (profiled invocations)" in text
    # the device's streaming vector length, measured in the emulated process
    facts = json.loads((out / "devices" / "qemu-sme2-vl512.json").read_text())
    assert facts["sme_vector_length_bits"] == 512
    validity = json.loads((out / "validity" / "qemu-sme2-vl512" / "synth-tiny.json").read_text())
    length = [c for c in validity["checks"] if c["name"].startswith("streaming vector length")]
    assert length and length[0]["passed"]  # MNN's SME2 kernels: written for 512 bits
    validity = json.loads((out / "validity" / "host" / "synth-tiny.json").read_text())
    unprofiled = [c["name"] for c in validity["checks"] if "profile" in c["name"]]
    assert unprofiled == []  # no execution checks where nothing was profiled
    assert_the_mask_hides_sme_and_nothing_else(tmp_path, cfg["devices"]["qemu-sme2-vl512"])


# what the SME mask must hide, read from Linux's arch/arm64/include/uapi/asm/hwcap.h (6.16)
# apart from the library's own constants: AT_HWCAP's SME2P2 .. SME_SMOP4, AT_HWCAP2's SME ..
# SME_FA64, SME2 .. SME_F16F16 and SME_LUTV2 .. SME_SF8DP2
SME_HWCAP = sum(1 << bit for bit in range(42, 48))
SME_HWCAP2 = sum(1 << bit for bits in (range(23, 31), range(37, 43), range(57, 63)) for bit in bits)
AUXV_PROBE = (
    "import ctypes; libc = ctypes.CDLL(None); libc.getauxval.restype = ctypes.c_ulong; "
    "libc.__getauxval.restype = ctypes.c_ulong; "
    "print(libc.getauxval(16), libc.getauxval(26), libc.__getauxval(26))"
)


def assert_the_mask_hides_sme_and_nothing_else(workdir, device_spec: dict) -> None:
    """The SME mask, built by the workflow's own function with Debian's cross compiler and
    preloaded into the emulated userland's Python on the SME2 CPU: getauxval and glibc's alias
    __getauxval (what cpuinfo imports) lose every SME bit and keep every other bit."""
    with open(workdir / "mask-build.log", "w") as log:
        mask = build_sme_mask(
            "linux-arm64", None, str(workdir / "mask-build"), str(workdir / "mask"), log
        )
    assert mask["platform"] == "linux-arm64" and mask["tool"] == "libsme_mask.so"
    userland = workdir / "resources/emulation/userland.json"
    device = QemuDevice("probe", {**device_spec["qemu"], "userland": str(userland)})
    library = {"LD_PRELOAD": str(workdir / "mask" / "libsme_mask.so")}
    runs = {
        hidden: device.run([device.python(), "-c", AUXV_PROBE], 120, library if hidden else None)
        for hidden in (False, True)
    }
    assert all(run.ok for run in runs.values()), [run.stderr for run in runs.values()]
    (hwcap, hwcap2, alias), (masked, masked2, masked_alias) = (
        [int(word) for word in runs[hidden].stdout.split()] for hidden in (False, True)
    )
    assert hwcap2 & (1 << 23) and hwcap2 & (1 << 37) and alias == hwcap2  # SME and SME2
    assert masked2 == masked_alias == hwcap2 & ~SME_HWCAP2 and masked == hwcap & ~SME_HWCAP
