"""The pinned llvm-mca (config/cost_model.yaml's `llvm_mca`: Debian unstable's llvm-23 and the
libraries it loads), fetched from Debian and run here by its own loader, prices the encodings
of tests/data/llvm-mca/input.s as its tables captured there say (the same release, the same
model of the C1-Ultra), outside streaming mode and in it; and rule predict_gain's job prices a
pair's profiles through them (`prediction.pricing: per_instruction`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import network_marks

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))

from test_instruction_prices import ENCODINGS, PREDICTION, pair_design, pair_profiles, prices

from mnnrepro.analysis.instruction_prices import BY_LATENCY, price_list
from mnnrepro.files import write_json
from mnnrepro.toolchain.llvm_mca import LlvmTools, provide_llvm_mca

pytestmark = network_marks(Debian="the pinned llvm-23 packages")


@pytest.fixture(scope="module")
def receipt(root, tmp_path_factory) -> dict:
    """The pinned packages, fetched and unpacked once (rule fetch_llvm_mca's receipt)."""
    costs = yaml.safe_load((root / "config" / "cost_model.yaml").read_text())
    return provide_llvm_mca(costs["llvm_mca"], tmp_path_factory.mktemp("llvm-mca"))


def test_the_pinned_llvm_mca_prices_the_encodings_as_captured(root, receipt):
    costs = yaml.safe_load((root / "config" / "cost_model.yaml").read_text())
    tools = LlvmTools.of(receipt)
    assert tools.version().startswith("Debian LLVM version 23.")
    spec = costs["cores"]["c1-ultra"]["llvm_mca"]
    for mode, key in (("core", "mattr"), ("streaming", "streaming_mattr")):
        priced = price_list(tools, list(ENCODINGS.values()), spec["mcpu"], spec[key])
        captured = prices()[mode]
        assert set(priced.index) == set(ENCODINGS.values())
        pd.testing.assert_frame_equal(
            priced.loc[captured.index, captured.columns], captured, check_dtype=False
        )
    # in streaming mode a load into Z holds the SME2 unit's load pipe for its latency: the
    # loop's LD1W, latency 2 where its reciprocal throughput is 1
    load = "a540a144"
    held = price_list(tools, [load], spec["mcpu"], spec["streaming_mattr"], BY_LATENCY)
    plain = price_list(tools, [load], spec["mcpu"], spec["streaming_mattr"])
    assert plain.loc[load, "unit:C1UUnitCMELD"] == 1.0
    assert held.loc[load, "unit:C1UUnitCMELD"] == 2.0


def test_rule_predict_gains_job_prices_the_counted_profiles_with_the_fetched_tools(
    root, receipt, tmp_path
):
    """The job of rule predict_gain with `prediction.pricing: per_instruction`, on a pair's
    profiles where profile_kernels writes them and the fetched tools' receipt: its prediction
    names the tools that priced it and the profiles' digest, prices the SME2 GEMM on the SME2
    unit, and its prediction.md is written."""
    from types import SimpleNamespace

    from mnnrepro.analysis.jobs import predicted_here
    from mnnrepro.analysis.prediction_text import prediction_markdown

    index = tmp_path / "profiles" / "qemu" / "m.json"
    entries = []
    for profile in pair_profiles():
        where = index.with_suffix("") / profile["variant"] / f"{profile['phase']}.json"
        write_json(where, profile)
        entries.append({k: profile[k] for k in ("variant", "phase")})
    write_json(index, {"profiles": entries})
    write_json(tmp_path / "receipt.json", receipt)
    job = SimpleNamespace(
        input=SimpleNamespace(
            constants=str(root / "config" / "cost_model.yaml"),
            kernels=str(tmp_path / "kernels.csv"),  # by class only: not read here
            profiles=[str(index)],
            llvm_mca=str(tmp_path / "receipt.json"),
        ),
        params=SimpleNamespace(prediction={**PREDICTION, "pricing": "per_instruction"}, waiting={}),
    )
    (tmp_path / "kernels.csv").write_text("")
    variants = {v: {"runtime": {"thread_num": 1}} for v in ("off", "on")}
    manifests = [{"model": "m", "spec": {"shape": "tiny"}}]
    document = predicted_here(job, pair_design(), variants, manifests)
    assert document["pricing"] == "per_instruction"
    assert document["priced_by"] == LlvmTools.of(receipt).version()
    assert len(document["inputs"]["profiles"]) == 64
    (predicted,) = document["predictions"]
    prefill = predicted["mix_per_token"]["treatment"]["prefill"]["streaming"]
    assert prefill["unit:C1UUnitCMEMML0"] > 0  # the outer products, on the SME2 unit's pipe
    assert "each executed instruction priced by Debian LLVM" in prediction_markdown(document)
