"""The pinned llvm-mca (config/cost_model.yaml's `llvm_mca`: Debian unstable's llvm-23 and the
libraries it loads), fetched from Debian and run here by its own loader, prices the encodings
of tests/data/llvm-mca/input.s as its tables captured there say (the same release, the same
model of the C1-Ultra), outside streaming mode and in it."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import yaml
from conftest import network_marks

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))

from test_instruction_prices import ENCODINGS, prices

from mnnrepro.analysis.instruction_prices import BY_LATENCY, price_list
from mnnrepro.toolchain.llvm_mca import LlvmTools, provide_llvm_mca

pytestmark = network_marks(Debian="the pinned llvm-23 packages")


def test_the_pinned_llvm_mca_prices_the_encodings_as_captured(root, tmp_path):
    costs = yaml.safe_load((root / "config" / "cost_model.yaml").read_text())
    tools = LlvmTools.of(provide_llvm_mca(costs["llvm_mca"], tmp_path / "llvm-mca"))
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
