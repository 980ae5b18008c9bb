"""Each counted instruction priced one by one through LLVM's scheduling model of the phone's core
(config/cost_model.yaml's `cores.<core>.llvm_mca`: its -mcpu, and the attributes of its
streaming mode): the encodings QEMU's counting run executed (the profiles' `encodings`,
devices/instruction_mix.py) disassembled by llvm-mc, then priced by llvm-mca's instruction
tables, with its own -mcpu model: per instruction its micro-ops and its pressure on each of the
core's units (V0-V5, the load/store pipes, the SME2 unit's CME pipes, ...: the cycles each
unit spends on it when the pipelines are full).

A function that runs SME instructions is priced in streaming mode (its vector instructions go
to the SME2 unit, `+mca-streaming-sched`), every other function as the core runs it. Summed
over a phase's instructions, the busiest unit bounds the cycles (analysis/prediction.py's
unit_cycles), and so does the core's dispatch width: a throughput bound, in which loads
overlap arithmetic. In streaming mode a load into Z, ZA or ZT0 registers and a move to or
from ZA hold their units for their latency instead (BY_LATENCY): the SME2 unit waits on them
(issue 80's rule; no constant of it is fitted). Other latency chains are not priced.

llvm-mca prints a pressure with two decimals (1/6 as 0.17): each is read back as the nearest
fraction with a denominator a pipe group can give (PIPE_DENOMINATORS)."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import cache

import pandas as pd

from mnnrepro.analysis.attribution import mix_columns
from mnnrepro.analysis.token_work import runs_sme
from mnnrepro.errors import DataError
from mnnrepro.toolchain.llvm_mca import LlvmMcaError, LlvmTools

ENCODING = re.compile(
    r"^\s*(.*?)\s*// encoding: \[(0x[0-9a-f]{2}),(0x[0-9a-f]{2}),(0x[0-9a-f]{2}),(0x[0-9a-f]{2})\]"
)
RESOURCE = re.compile(r"^\[([0-9.]+)\]\s+- (\S+)$")
PIPE_DENOMINATORS = (1, 2, 3, 4, 6, 8, 12, 24)
UOPS = "uops"  # a priced table's column of micro-ops, beside its units'
UNIT_PREFIX = "unit:"  # a priced table's column of a unit's pressure: unit:<the model's name>
# in streaming mode, what is priced by its latency (the rule, not fitted): a load into
# Z, ZA or ZT0 registers, and a move to or from ZA
BY_LATENCY = re.compile(r"^(ld\w*\s+(\{\s*)?(z\d|za|zt0)|ldr\s+(z\d|za|zt0)|mova?z?\s.*\bza)")
DISASSEMBLER = ["--disassemble", "-triple=aarch64", "-mattr=+all", "-show-encoding"]


@cache
def exact(printed: str) -> float:
    """A pressure as llvm-mca prints it (two decimals) -> the nearest k/d, d a pipe group's."""
    value = float(printed)
    best = min(
        (Fraction(round(value * d), d) for d in PIPE_DENOMINATORS), key=lambda f: abs(f - value)
    )
    return float(best)


def disassembled(tools: LlvmTools, encodings: list[str]) -> dict[str, str]:
    """Each encoding (8 hex digits, as the profiles hold them) -> its instruction as llvm-mc
    prints it; an encoding LLVM does not know is left out."""
    lines = [" ".join(f"0x{int(e, 16) >> (8 * i) & 0xFF:02x}" for i in range(4)) for e in encodings]
    out = tools.run("llvm-mc", DISASSEMBLER, "\n".join(lines) + "\n")
    texts = {}
    for line in out.splitlines():
        found = ENCODING.match(line)
        if found:
            text, *octets = found.groups()
            texts["".join(o[2:] for o in reversed(octets))] = " ".join(text.split())
    return texts


def mca_table(out: str) -> tuple[list[str], list[tuple[str, list[str], list[str]]]]:
    """llvm-mca's instruction tables -> (its units by column, each named as the model names
    it, `.k` for the k-th of a group: C1UUnitB.0, C1UUnitV0; per instruction: its text, its
    micro-ops, latency and reciprocal throughput, and its pressure per column, as printed)."""
    lines = out.splitlines()
    units = [
        f"{found.group(2)}.{found.group(1).partition('.')[2]}".rstrip(".")
        for found in map(RESOURCE.match, lines)
        if found
    ]
    info_at = next(
        i for i, line in enumerate(lines) if line.startswith("[1]") and "Instructions:" in line
    )
    by_at = lines.index("Resource pressure by instruction:") + 1
    text_at = lines[by_at].index("Instructions:")
    rows = []
    info = lines[info_at + 1 :]
    pressure = lines[by_at + 1 :]
    info_text_at = lines[info_at].index("Instructions:")
    for i, row in enumerate(pressure):
        if not row.strip():
            break
        figures = info[i][:info_text_at].split()[:3]  # micro-ops, latency, RThroughput
        text = " ".join(row[text_at:].split())
        if text != " ".join(info[i][info_text_at:].split()):
            raise LlvmMcaError(f"llvm-mca's two tables disagree at row {i}: {text!r}")
        rows.append((text, figures, row[:text_at].split()))
    return units, rows


def price_list(
    tools: LlvmTools,
    encodings: list[str],
    mcpu: str,
    mattr: str,
    by_latency: re.Pattern | None = None,
) -> pd.DataFrame:
    """Per encoding LLVM knows and the model prices: its micro-ops (UOPS) and its pressure on
    each unit (a column per unit, named as the model names it). An instruction whose text
    by_latency matches holds its units for its latency, not its reciprocal throughput."""
    texts = disassembled(tools, sorted(set(encodings)))
    order = sorted(texts, key=lambda e: texts[e])
    args = ["-mtriple=aarch64", f"-mcpu={mcpu}", f"-mattr={mattr}", "-instruction-tables"]
    args.append("-skip-unsupported-instructions=any")
    out = tools.run("llvm-mca", args, "\n".join(texts[e] for e in order) + "\n")
    units, rows = mca_table(out)
    names = [UNIT_PREFIX + unit for unit in units]
    priced, at = {}, 0
    for text, (uops, latency, throughput), values in rows:
        while at < len(order) and texts[order[at]] != text:
            at += 1  # an instruction llvm-mca skipped (no scheduling information)
        if at == len(order):
            raise LlvmMcaError(f"llvm-mca priced {text!r}, which was not asked")
        held = 1.0
        if by_latency is not None and by_latency.match(text) and float(throughput) > 0:
            held = int(latency) / exact(throughput)
        pressure = [0.0 if v == "-" else exact(v) * held for v in values]
        priced[order[at]] = {UOPS: int(uops), **dict(zip(names, pressure, strict=True))}
        at += 1
    return pd.DataFrame.from_dict(priced, orient="index", columns=[UOPS, *names])


def unit_columns(priced: pd.DataFrame) -> dict[str, str]:
    """The priced counts of priced_rows' table that token_work.mixes sums: micro-ops and
    every unit's pressure."""
    return {c: c for c in priced.columns if c == UOPS or c.startswith(UNIT_PREFIX)}


def priced_rows(profiles: list[dict], prices: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each counted function's row of the profiles (kernels.csv's keys and ins_* columns) with
    its instructions' micro-ops and unit pressures summed: prices["core"] for a function that
    runs no SME instruction, prices["streaming"] for one that does. An encoding neither list
    prices is counted in `unpriced`."""
    keys, counts = [], []
    for profile in profiles:
        for row in profile.get("rows", []):
            words = row.get("encodings")
            if words is None:
                raise DataError(
                    f"profile of {profile.get('variant')} {profile.get('phase')}",
                    "counted without encodings (before they were recorded): delete it and "
                    "count again",
                )
            counts += [(len(keys), word, n) for word, n in words.items()]
            keys.append(
                {
                    **{
                        k: profile.get(k, "")
                        for k in ("device", "model", "variant", "phase", "profiler")
                    },
                    "library": row["dso"],
                    "symbol": row["symbol"] or "",
                    **mix_columns(row),
                }
            )
    table = pd.DataFrame(keys)
    executed = pd.DataFrame(counts, columns=["row", "encoding", "count"])
    streaming = runs_sme(table) if len(table) else pd.Series(dtype=bool)
    executed["mode"] = (
        streaming.reindex(executed["row"]).map({True: "streaming", False: "core"}).values
    )
    summed = []
    for mode, group in executed.groupby("mode"):
        listed = prices[mode]
        known = group["encoding"].isin(listed.index)
        priced = listed.loc[group.loc[known, "encoding"]].mul(
            group.loc[known, "count"].values, axis=0
        )
        summed.append(priced.groupby(group.loc[known, "row"].values).sum())
        summed.append(
            pd.DataFrame(
                {"unpriced": group.loc[~known, "count"].groupby(group.loc[~known, "row"]).sum()}
            )
        )
    columns = [UOPS, *(c for c in next(iter(prices.values())).columns if c != UOPS)]
    totals = pd.concat(summed).groupby(level=0).sum() if summed else pd.DataFrame()
    totals = totals.reindex(index=range(len(table)), columns=[*columns, "unpriced"]).fillna(0.0)
    return pd.concat([table, totals["unpriced"], totals[columns]], axis=1)


def priced_run(profiles: list[dict], tools: LlvmTools, spec: dict) -> pd.DataFrame:
    """A counting run's profiles priced (priced_rows) by the core's model (spec: its cost
    model's `llvm_mca`: mcpu, mattr, streaming_mattr)."""
    encodings = sorted(
        {w for p in profiles for row in p.get("rows", []) for w in row.get("encodings") or {}}
    )
    prices = {
        "core": price_list(tools, encodings, spec["mcpu"], spec["mattr"]),
        "streaming": price_list(
            tools, encodings, spec["mcpu"], spec["streaming_mattr"], BY_LATENCY
        ),
    }
    return priced_rows(profiles, prices)
