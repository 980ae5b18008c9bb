"""The fourth stack end to end: ExecuTorch's pinned PyPI wheels (the real downloads), the tiny
synthetic checkpoint exported by ExecuTorch's own LLM exporter to an XNNPACK program, run by
executorch_tool; its one-binary pair (the SME mask against the default) on this host (x86-64:
an equality check), then in the same directory on QEMU without SME and with SME2 at 512 bits:
the gate, the rows, and XNNPACK's SME2 kernels executed by the default and by none masked."""

from __future__ import annotations

import json

import pandas as pd
import yaml
from conftest import assert_no_sme2_kernel_ran_without_sme, network_marks, run_snakemake

pytestmark = network_marks(PyPI="the wheels", Debian="the emulated userland")

HOST = "tests/workflow/config-executorch.yaml"
# KleidiAI's SME2 GEMMs of the program's fp32 matrix products, found here in the emulated
# profiles: a prefill's outer products, a decode step's (its int4 GEMMs stay NEON: export.py)
PREFILL_KERNEL = "kai_kernel_matmul_clamp_f32_f32p2vlx1_f32p2vlx1biasf32_sme2_mopa"
DECODE_KERNEL = "kai_kernel_matmul_clamp_f32_f32_f32p2vlx1b_1x16vl_sme2_mla"


def emulated_config(root) -> dict:
    cfg = yaml.safe_load((root / "config/emulated-sme2.yaml").read_text())
    host = yaml.safe_load((root / HOST).read_text())
    cfg["experiment"] = "executorch-emulated"
    cfg["engines"] = {"et": {"executorch": {"platform": "linux-arm64"}}}
    cfg["models"] = host["models"]
    cfg["devices"] = {name: cfg["devices"][name] for name in ("qemu-no-sme", "qemu-sme2-vl512")}
    cfg["variants"] = host["variants"]
    cfg["comparison"] = {**host["comparison"], "on_non_sme2_device": "fallback-check"}
    cfg.pop("prediction", None)
    # the host run's prompts, whose ids the program's export encoded: a gate setting other than
    # the prompts exports nothing again (rule convert_pte_model's params)
    cfg["correctness"].update(prompts=host["correctness"]["prompts"], max_new_tokens=4)
    cfg["attribution"]["devices"] = ["qemu-sme2-vl512"]  # what ran, on the SME2 CPU alone
    # emulated timings are recorded, never judged: no warm-up, short phases
    cfg["bench"].update(
        quiet_timeout_s=0, quiet_window_s=0.1, warmup=0, prompt_tokens=16, generate_tokens=4
    )
    return cfg


def validity_failures(out, device: str) -> list[str]:
    validity = json.loads((out / f"validity/{device}/synth-tiny.json").read_text())
    return [c["name"] for c in validity["checks"] if not c["passed"]]


def test_the_executorch_pair_on_this_host_and_on_emulated_cpus(root, seed_models, tmp_path):
    host = yaml.safe_load((root / HOST).read_text())
    seed_models(tmp_path, host["models"], checkpoint=True)
    run_snakemake(
        root, "--cores", "2", "--configfile", str(root / HOST), "--directory", str(tmp_path)
    )
    out = tmp_path / "results" / "executorch"
    (record,) = [
        json.loads(p.read_text()) for p in tmp_path.glob("results/engines/et-*/wheels.json")
    ]
    assert record["target_arch"] == "x86_64" and record["delegate"]["sme2_kernels"] == []
    modes = json.loads((out / "modes/host.json").read_text())["modes"]
    assert [m["mode"] for m in modes] == ["equal"]  # x86-64: the mask changes nothing
    assert validity_failures(out, "host") == []
    exported = tmp_path / "results/models/synth-tiny/pte.json"
    model = json.loads(exported.read_text())
    assert model["exporter"]["delegate"] == "xnnpack"
    exported_at = exported.stat().st_mtime_ns

    cfg = emulated_config(root)
    config_path = tmp_path / "executorch-emulated.yaml"
    config_path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    run_snakemake(
        root, "--cores", "2", "--configfile", str(config_path), "--directory", str(tmp_path)
    )
    out = tmp_path / "results" / "executorch-emulated"
    # the same program on the emulated CPUs: another gate length exports nothing again
    assert exported.stat().st_mtime_ns == exported_at
    arm = [json.loads(p.read_text()) for p in tmp_path.glob("results/engines/et-*/wheels.json")]
    (arm,) = [r for r in arm if r["target_arch"] == "aarch64"]
    assert {PREFILL_KERNEL, DECODE_KERNEL} <= set(arm["delegate"]["sme2_kernels"])
    for device in cfg["devices"]:
        assert validity_failures(out, device) == [], device
    bench = pd.read_csv(out / "bench.csv")
    assert_no_sme2_kernel_ran_without_sme(tmp_path, cfg, bench)
    kernels = pd.read_csv(out / "kernels.csv", keep_default_na=False)
    sme2 = kernels[kernels["sme2_kernel"] & (kernels["count"] > 0)]
    ran = sme2.groupby(["variant", "phase"])["symbol"].agg(set)
    # XNNPACK's SME2 kernels ran in the default's prefill and decode; none with SME masked
    assert set(ran.index) == {("et-default", "prefill"), ("et-default", "decode")}
    assert PREFILL_KERNEL in ran[("et-default", "prefill")]
    assert DECODE_KERNEL in ran[("et-default", "decode")]
