"""Instructions priced one by one (analysis/instruction_prices.py) through llvm-mca's model of
the phone's core, and the cycles a token's priced instructions take (prediction.unit_cycles).

tests/data/llvm-mca/ holds llvm-mca 23.1.4's real instruction tables (`-mcpu=c1-ultra
-instruction-tables`, outside streaming mode and in it) of input.s: the instructions of
tests/data/qemu/in_asm-kleidiai-sme2.log's KleidiAI SME2 loop as llvm-mc disassembled their
encodings, with a NEON SDOT, a q-register load, a store pair and SMSTART besides
(tests/workflow/test_llvm_mca.py prices them with the pinned llvm-mca itself)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mnnrepro.analysis.instruction_prices import (
    BY_LATENCY,
    UNIT_PREFIX,
    UOPS,
    exact,
    mca_table,
    priced_rows,
    unit_columns,
)
from mnnrepro.analysis.prediction import unit_cycles
from mnnrepro.analysis.token_work import mixes
from mnnrepro.devices.instruction_mix import CLASSES
from mnnrepro.errors import DataError
from mnnrepro.toolchain.llvm_mca import LlvmMcaError

DATA = Path(__file__).parents[1] / "data" / "llvm-mca"
SMOPA, SDOT, LOAD = (
    "smopa za0.s, p2/m, p2/m, z4.b, z8.b",
    "sdot v0.4s, v17.16b, v15.16b",
    "ldr q0, [x0, #16]",
)
# the encodings of those three instructions (as QEMU logged the loop's, and A64's)
ENCODINGS = {SMOPA: "a0884880", SDOT: "4e8f9620", LOAD: "3dc00400"}


def table(mode: str) -> dict[str, dict[str, float]]:
    units, rows = mca_table((DATA / f"c1-ultra-{mode}.txt").read_text())
    return {
        text: {
            UOPS: int(figures[0]),
            **{u: 0.0 if p == "-" else exact(p) for u, p in zip(units, values, strict=True)},
        }
        for text, figures, values in rows
    }


def test_two_decimals_are_read_back_as_the_pipes_fractions():
    assert exact("0.17") == pytest.approx(1 / 6)  # one of 6 V pipes
    assert exact("0.13") == 0.125  # one of 8 integer pipes
    assert exact("0.33") == pytest.approx(1 / 3) and exact("0.67") == pytest.approx(2 / 3)
    assert exact("2.00") == 2.0 and exact("0.25") == 0.25


def test_each_instruction_costs_the_units_the_model_gives_it():
    core, streaming = table("core"), table("streaming")
    assert len(core) == len(streaming) == 14  # every instruction of input.s priced
    v_pipes = [f"C1UUnitV{i}" for i in range(6)]
    # outside streaming mode a NEON SDOT is one of six V pipes' work, a q load one of 4 pipes'
    assert [core[SDOT][u] for u in v_pipes] == pytest.approx([1 / 6] * 6)
    assert sum(core[LOAD][u] for u in core[LOAD] if "L" in u and "CME" not in u) == 1.0
    # in streaming mode the SME2 unit runs them: SMOPA 2 cycles of one outer-product pipe,
    # the same SDOT half a cycle of each of the two vector pipes, no V pipe at all
    assert streaming[SMOPA]["C1UUnitCMEMML0"] == 2.0
    assert sum(streaming[SDOT][u] for u in v_pipes) == 0
    assert sum(v for u, v in streaming[SDOT].items() if "CMEVX" in u) == 1.0
    assert streaming["stp x19, x20, [sp, #-144]!"][UOPS] == 2  # a store pair: two micro-ops


def test_the_two_tables_of_one_run_must_list_the_same_instructions():
    out = (DATA / "c1-ultra-core.txt").read_text()
    at = out.index("Resource pressure by instruction:")
    broken = out[:at] + out[at:].replace("sdot\tv0.4s", "sdot\tv1.4s", 1)
    with pytest.raises(LlvmMcaError, match="two tables disagree"):
        mca_table(broken)


def prices() -> dict[str, pd.DataFrame]:
    frames = {}
    for mode in ("core", "streaming"):
        rows = {ENCODINGS[t]: p for t, p in table(mode).items() if t in ENCODINGS}
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frames[mode] = frame.rename(columns=lambda c: c if c == UOPS else UNIT_PREFIX + c)
    return frames


def profile(rows: list[dict], phase: str = "prefill") -> dict:
    keys = {"device": "qemu", "model": "m", "variant": "on", "phase": phase}
    return {**keys, "rows": rows}


def counted(symbol: str, encodings: dict, sme: int) -> dict:
    instructions = dict.fromkeys(CLASSES, 0)
    instructions.update(sme_outer_product=sme, vector_other=sum(encodings.values()) - sme)
    return {
        "dso": "lib.so",
        "symbol": symbol,
        "count": 1,
        "unlogged_blocks": 0,
        "instructions": instructions,
        "encodings": encodings,
    }


PREDICTION = {"device": "qemu", "core": "c1-ultra", "soc": "dimensity-9500", "model": "qwen3-vl-4b"}


def pair_profiles() -> list[dict]:
    """A pair's profiles of model `m` on device `qemu`: a NEON GEMM (`off`) and an SME2 one
    (`on`), start-up, prefill and decode, each phase a multiple of the start-up's work."""
    work = {"startup": 1, "prefill": 8, "decode": 4}
    profiles = []
    for variant, symbol, words, sme in (
        ("off", "gemm_neon", {ENCODINGS[SDOT]: 30, ENCODINGS[LOAD]: 20}, 0),
        ("on", "gemm_sme2", {ENCODINGS[SMOPA]: 12, ENCODINGS[SDOT]: 2}, 12),
    ):
        for phase, n in work.items():
            rows = [counted(symbol, {w: k * n for w, k in words.items()}, sme * n)]
            profiles.append({**profile(rows, phase), "variant": variant, "profiler": "qemu"})
    return profiles


def pair_design():
    """What prediction_document reads of a design that compares `off` with `on`."""
    from types import SimpleNamespace

    from mnnrepro.design import pairs_of

    pairs = pairs_of({"baseline": "off", "treatment": "on"})
    bench = SimpleNamespace(prompt_tokens=9, generate_tokens=5)
    return SimpleNamespace(comparison=SimpleNamespace(pairs=pairs, claims={}), bench=bench)


def test_a_function_is_priced_in_the_mode_it_runs_in():
    """A function that runs SME instructions is priced in streaming mode, every other one as
    the core runs it; an encoding neither price list holds is counted as not priced."""
    sme = counted("gemm_sme2", {ENCODINGS[SMOPA]: 10, ENCODINGS[SDOT]: 4}, sme=10)
    neon = counted("gemm_neon", {ENCODINGS[SDOT]: 12, ENCODINGS[LOAD]: 8, "00000000": 3}, sme=0)
    phases = [profile([sme, neon], phase) for phase in ("prefill", "decode", "startup")]
    priced = priced_rows(phases, prices())
    priced = priced[priced["phase"] == "prefill"].set_index("symbol")
    assert priced.loc["gemm_sme2", "unit:C1UUnitCMEMML0"] == 20.0
    assert priced.loc["gemm_sme2", "unit:C1UUnitV0"] == 0  # its SDOT runs on the SME2 unit
    assert priced.loc["gemm_neon", "unit:C1UUnitV0"] == pytest.approx(12 / 6)
    assert priced.loc["gemm_neon", "unpriced"] == 3 and priced.loc["gemm_sme2", "unpriced"] == 0
    assert priced.loc["gemm_neon", UOPS] == 12 + 8

    # per phase, the busiest unit: 4 threads share the core's units, not the SME2 unit's
    every = priced_rows(phases, prices())
    totals = mixes(every, "qemu", "m", "on", "", unit_columns(every))["prefill"]
    mix = {group: dict(counts) for group, counts in totals.items()}
    v = {"dispatch_width": 10}
    assert unit_cycles(mix, v) == 20.0  # the outer products' pipe
    assert unit_cycles(mix, v, parallel=4) == 20.0
    neon_only = {g: dict.fromkeys(c, 0.0) if g == "streaming" else c for g, c in mix.items()}
    assert unit_cycles(neon_only, v) == pytest.approx(max(12 / 6, 20 / 10, 8 / 4))
    assert unit_cycles(neon_only, v, parallel=4) == pytest.approx(unit_cycles(neon_only, v) / 4)


def test_a_profile_counted_without_encodings_is_refused_naming_it():
    row = counted("f", {}, sme=0)
    del row["encodings"]
    with pytest.raises(DataError, match=r"on prefill: counted without encodings"):
        priced_rows([profile([row])], prices())


def test_streaming_loads_and_za_moves_are_the_instructions_priced_by_latency():
    priced = [
        "ld1b { z0.b }, p3/z, [x2]",
        "ld1rqb { z2.b }, p4/z, [x11]",
        "ld1h { z0.h, z1.h }, pn8/z, [x11]",
        "ld1w { za0v.s[w12, 0] }, p0/z, [x0]",
        "ldr za[w12, 0], [x0]",
        "ldr zt0, [x0]",
        "mov z0.s, p0/m, za0h.s[w12, 0]",
        "mov za0h.b[w12, 0], p0/m, z0.b",
        "movaz { z0.s, z1.s }, za0h.s[w12, 0:1]",
    ]
    by_throughput = [
        "ldr q0, [x0, #16]",
        "ldp x1, x2, [sp]",
        "mov x0, x1",
        "mov z0.d, z1.d",
        "sdot za.s[w8, 0, vgx2], { z4.b, z5.b }, z2.b[0]",
        SMOPA,
        "st1w { z4.s }, p0, [x10]",
    ]
    assert [t for t in priced if not BY_LATENCY.match(t)] == []
    assert [t for t in by_throughput if BY_LATENCY.match(t)] == []


def test_the_workflows_prediction_priced_per_instruction_is_unit_gains_with_its_own_error():
    """prediction_document with `priced` (rule predict_gain, `prediction.pricing:
    per_instruction`) gives each pair the gains unit_gains gives the benchmarks for the same
    priced rows, its interval's model error is the cost model's per-instruction one, and
    prediction.md names what priced it; the same rows priced by class predict otherwise."""
    import yaml

    from mnnrepro.analysis.cost_model import CostModel
    from mnnrepro.analysis.prediction import Target, prediction_document, unit_gains, weights
    from mnnrepro.analysis.prediction_text import prediction_markdown
    from mnnrepro.models.shapes import SHAPES

    costs = Path(__file__).parents[2] / "config" / "cost_model.yaml"
    table = priced_rows(pair_profiles(), prices())
    context = {
        "constants": costs,
        "shapes": {"m": SHAPES["tiny"]},
        "prompt_tokens": 9,  # 8 tokens of prefill past the start-up's
        "generate_tokens": 5,
        "variants": {v: {"runtime": {"thread_num": 1}} for v in ("off", "on")},
        "inputs": {},
        "priced_by": "llvm-mca 23.1.4",
    }
    design, spec = pair_design(), PREDICTION
    document = prediction_document(table, design, spec, context, priced=True)
    cost = CostModel.read(costs, *list(spec.values())[1:], "per_instruction")
    scale = weights(cost.phone_shape) / weights(SHAPES["tiny"])
    tokens = {"prefill": 9, "decode": 5}
    expected = unit_gains(
        table, ("qemu", "m"), ("off", "on"), tokens, 9, cost, Target.of(cost, scale, 9, 5), (1, 1)
    )
    (predicted,) = document["predictions"]
    assert predicted["phases"]["prefill"]["gain"] == pytest.approx(expected["prefill"])
    error = yaml.safe_load(costs.read_text())["model_error"]["log_sd_per_instruction"]["value"]
    assert document["interval"]["model_error_log_sd"] == error
    assert document["pricing"] == "per_instruction"
    text = prediction_markdown(document)
    assert "each executed instruction priced by llvm-mca 23.1.4" in text
    # no ranged constant moves a 1-thread prefill priced so (the clock cancels), though the
    # sensitivity table lists them: none is named as the one it is most sensitive to
    (prefill,) = [line for line in text.splitlines() if line.startswith("| on vs off | m | pre")]
    assert prefill.endswith("| - | neither |") and "| on vs off | prefill | `socs." in text
    # each pricing reads, ranges and names only the constants it uses
    used = {c["name"].split(".")[-1] for c in document["constants"]}
    assert "dispatch_width" in used and not used & {*CLASSES, "overlap"}
    swung = {s["constant"] for s in predicted["phases"]["decode"]["sensitivity"]}
    assert swung and all(".core." not in name for name in swung)
    by_class = prediction_document(table, design, spec, context)
    assert "dispatch_width" not in {c["name"].split(".")[-1] for c in by_class["constants"]}
    gained = by_class["predictions"][0]["phases"]["prefill"]["gain"]
    assert gained != pytest.approx(expected["prefill"])
