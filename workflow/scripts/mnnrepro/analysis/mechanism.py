"""Why the gain is what it is: each variant's distance from what the hardware allows, energy
per token, and the mechanism stated as checks.

mechanism.csv, one row per device x model x variant: median decode tok/s against the decode
ceiling (measured read bandwidth / bytes per decode token, models/mnn_layout.py), median
prefill tok/s as arithmetic throughput (GOPS), and median joules per token of both phases.
mechanism.json adds the bandwidth samples' summary, the energy comparison of every compared
pair (tokens per joule, treatment / baseline, with the speedup's paired statistics) and the
checks:
* `prefill gain > decode gain` (the compute-bound phase gains more), judged on prefill's
  speedup over decode's per block (the row the stopping rule of `until - verdict` settles),
  with the summary's kind of interval: `shown` when its interval lies wholly above 1,
  `contradicted` when it lies wholly below 1, `inconclusive` when it holds 1, whatever the
  estimate (mnnrepro.sides: the stopping rule's own definition of settled, so an
  `inconclusive` row is one the run stopped on unsettled);
  `not applicable` for a pair that claims no gain (an equality check of two builds where SME2
  cannot exist, or a fallback check on a device without SME2): its gains are noise around
  zero, and their order says nothing;
* `decode near its ceiling` (the memory-bound phase is limited by bandwidth), judged on the
  interval of the treatment's share of its ceiling (its decode speeds' t interval over the
  ceiling at the highest and lowest bandwidth sample): `shown` when it lies at or above
  `NEAR_CEILING`, `not shown` when below, `inconclusive` when it holds `NEAR_CEILING`;
  `broken bound` when it lies wholly above 100 % (the ceiling is an upper bound, so the byte
  count or the bandwidth measurement is wrong); `unavailable` without a bandwidth
  measurement or a byte count.
  A variant's ceiling uses the bandwidth measured at its own thread count (one core cannot
  draw what all of them can), or every core's where that was not measured.
"""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd

from mnnrepro.analysis.conditions import with_dependence
from mnnrepro.analysis.energy import energy_comparison, energy_conditions
from mnnrepro.design import Design
from mnnrepro.intervals import experiment_intervals
from mnnrepro.models import mnn_layout
from mnnrepro.runs.precision import records_of_table
from mnnrepro.runs.stopping_rows import MECHANISM, block_log_ratios, row_name
from mnnrepro.sides import three_way
from mnnrepro.stats import Interval, t_interval

NEAR_CEILING = 0.5  # share of the decode ceiling that counts as bandwidth-bound
GAIN_ORDER_WORDS = ("shown", "contradicted", "inconclusive")  # above, below, holding 1
CEILING_WORDS = ("shown", "not shown", "inconclusive")  # above, below, holding NEAR_CEILING
GB = 1e9


def ceiling_tps(bandwidth_gb_per_s: float, bytes_per_token: int) -> float:
    """The decode speed the measured read bandwidth allows (an upper bound)."""
    return bandwidth_gb_per_s * GB / bytes_per_token


MECHANISM_COLUMNS = [
    "experiment",
    "device",
    "model",
    "variant",
    "engine",
    "decode_tps",
    "decode_bytes_per_token",
    "bandwidth_gb_per_s",
    "bandwidth_threads",
    "bandwidth_samples",
    "decode_ceiling_tps",
    "decode_ceiling_share",
    # the share's interval: the decode speed's t interval (its invocations, stats.ci_level)
    # over the ceiling at the highest and lowest bandwidth sample
    "decode_ceiling_share_low",
    "decode_ceiling_share_high",
    "prefill_tps",
    "prefill_ops_per_token",
    "prefill_gops",
    "prefill_joules_per_token",
    "decode_joules_per_token",
    "power_source",
    # the vision phase (a vision model): image tokens/s, the encoder's arithmetic, MP/s
    "vision_tps",
    "vision_ops_per_image_token",
    "vision_gops",
    "vision_mp_per_s",
]


def bandwidth_of(records: list[dict]) -> dict[tuple[str, str, int], dict]:
    """(device, engine, threads) -> the read bandwidth its probe measured at that thread count
    (median of the samples); threads 0 stands for every core."""
    out = {}
    for record in records:
        for engine, digest in record["engines"].items():
            for m in record["measurements"]:
                if m["probe_sha256"] != digest:
                    continue
                rates = [s["gb_per_s"] for s in m["samples"]]
                summary = {
                    "median_gb_per_s": statistics.median(rates),
                    "samples": len(rates),
                    "min_gb_per_s": min(rates),
                    "max_gb_per_s": max(rates),
                    "threads": m["threads"],
                    "buffer_mib": record["buffer_mib"],
                }
                out[(record["device"], engine, m["threads"])] = summary
                if m["threads"] == record["all_cores_threads"]:
                    out[(record["device"], engine, 0)] = summary
    return out


def _numbers(rows: pd.DataFrame, column: str) -> np.ndarray:
    """A column's numeric values, missing and non-numeric cells left out."""
    if column not in rows:
        return np.array([], dtype=float)
    return pd.to_numeric(rows[column], errors="coerce").dropna().to_numpy(dtype=float)


def _median(rows: pd.DataFrame, column: str):
    values = _numbers(rows, column)
    return float(np.median(values)) if len(values) else None


def share_interval(decode: pd.DataFrame, bw: dict, per_token, ci_level: float) -> dict:
    """The interval of a variant's share of its decode ceiling: its decode speed's Student t
    interval (the log speeds of its invocations) over the ceiling at the highest bandwidth
    sample (low end) and the lowest (high end); None without two speeds or a ceiling."""
    speeds = _numbers(decode, "tps")
    if len(speeds) < 2 or not bw or not per_token:
        return {"decode_ceiling_share_low": None, "decode_ceiling_share_high": None}
    low, high = t_interval(np.log(speeds), ci_level)
    return {
        "decode_ceiling_share_low": float(low) / ceiling_tps(bw["max_gb_per_s"], per_token),
        "decode_ceiling_share_high": float(high) / ceiling_tps(bw["min_gb_per_s"], per_token),
    }


def mechanism_table(
    bench: pd.DataFrame,
    layouts: dict[tuple[str, str], dict],
    bandwidth: dict,
    design: Design,
    engine_formats: dict[str, str] | None = None,
) -> pd.DataFrame:
    """layouts: (model, format) -> its layout (ceiling.describe_model for MNN's export, the
    GGUF's from its conversion); engine_formats: engine -> the format it reads (default MNN's);
    bandwidth: bandwidth_of."""
    rows = []
    live = bench[~bench["emulated"].astype(bool)]
    for (device, model, variant), group in live.groupby(["device", "model", "variant"]):
        engine = group["engine"].iloc[0]  # the engine's name, as every raw record says
        layout = layouts.get((model, (engine_formats or {}).get(engine, "mnn")), {})
        decode, prefill = group[group["phase"] == "decode"], group[group["phase"] == "prefill"]
        decode_tps, prefill_tps = _median(decode, "tps"), _median(prefill, "tps")
        per_token = layout.get("decode_bytes_per_token")
        ops = layout.get("prefill_ops_per_token")
        # the bandwidth its own thread count can draw on (else every core's)
        threads = group["thread_num"].iloc[0]
        threads = None if pd.isna(threads) else int(threads)
        bw = bandwidth.get((device, engine, threads)) or bandwidth.get((device, engine, 0), {})
        ceiling = ceiling_tps(bw["median_gb_per_s"], per_token) if bw and per_token else None
        sources = sorted(set(group["power_source"].dropna().astype(str)))
        rows.append(
            {
                "experiment": design.name,
                "device": device,
                "model": model,
                "variant": variant,
                "engine": engine,
                "decode_tps": decode_tps,
                "decode_bytes_per_token": per_token,
                "bandwidth_gb_per_s": bw.get("median_gb_per_s"),
                "bandwidth_threads": bw.get("threads"),
                "bandwidth_samples": bw.get("samples"),
                "decode_ceiling_tps": ceiling,
                "decode_ceiling_share": decode_tps / ceiling if ceiling and decode_tps else None,
                **share_interval(decode, bw, per_token, design.stats.ci_level),
                "prefill_tps": prefill_tps,
                "prefill_ops_per_token": ops,
                "prefill_gops": ops * prefill_tps / GB if ops and prefill_tps else None,
                "prefill_joules_per_token": _median(prefill, "joules_per_token"),
                "decode_joules_per_token": _median(decode, "joules_per_token"),
                "power_source": "; ".join(sources),
                **vision_columns(group[group["phase"] == "vision"], layout),
            }
        )
    return pd.DataFrame(rows, columns=MECHANISM_COLUMNS)


def vision_columns(vision: pd.DataFrame, layout: dict) -> dict:
    """The vision phase's speed, work and pixel rate (empty where it was not measured)."""
    vision_tps, vision_ops = _median(vision, "tps"), layout.get("vision_ops_per_image_token")
    mp_per_s = (
        (vision["pixels_mp"] / vision["seconds"]).median()
        if len(vision) and "pixels_mp" in vision
        else None
    )
    return {
        "vision_tps": vision_tps,
        "vision_ops_per_image_token": vision_ops,
        "vision_gops": vision_ops * vision_tps / GB if vision_ops and vision_tps else None,
        "vision_mp_per_s": mp_per_s,
    }


def gain_gap(part: pd.DataFrame, baseline: str, treatment: str, interval: Interval) -> dict:
    """Prefill's speedup over decode's, block by block (the same row the stopping rule judges,
    runs/stopping_rows.block_log_ratios), with the summary's kind of interval (interval: as
    intervals.run_intervals chose it)."""
    logs = block_log_ratios(records_of_table(part), row_name(baseline, treatment, MECHANISM))
    if logs.size < 2:
        return {"ratio": None, "ci_low": None, "ci_high": None, "n_pairs": int(logs.size)}
    low, high = interval.of(logs)
    return {
        "ratio": float(np.exp(logs.mean())),
        "ci_low": low,
        "ci_high": high,
        "n_pairs": logs.size,
    }


def gain_order_check(prefill: dict, decode: dict, gap: dict) -> dict:
    """`prefill gain > decode gain`, from two summary rows of one pair and the pair's gain_gap."""
    name = "prefill gain > decode gain"
    expectation = prefill.get("expectation", "claim")
    if expectation not in (None, "claim") and not pd.isna(expectation):
        return {
            "check": name,
            "status": "not applicable",
            "evidence": f"this pair claims no gain (expected: {expectation})",
        }
    evidence = (
        f"prefill {prefill['gain']:+.1%} [{prefill['gain_ci_low']:+.1%}, "
        f"{prefill['gain_ci_high']:+.1%}], decode {decode['gain']:+.1%} "
        f"[{decode['gain_ci_low']:+.1%}, {decode['gain_ci_high']:+.1%}]"
    )
    if gap["ratio"] is None:
        return {"check": name, "status": "unavailable", "evidence": evidence}
    evidence += (
        f"; prefill's speedup over decode's x{gap['ratio']:.3f} [{gap['ci_low']:.3f}, "
        f"{gap['ci_high']:.3f}] ({prefill.get('interval', 't')} interval over "
        f"{gap['n_pairs']} blocks)"
    )
    status = three_way(gap["ci_low"], gap["ci_high"], 1.0, GAIN_ORDER_WORDS)
    return {"check": name, "status": status, "evidence": evidence}


def ceiling_check(row: dict | None) -> dict:
    """`decode near its ceiling` for the treatment's row of mechanism.csv, judged on the
    share's interval (share_interval) as every check is (mnnrepro.sides): `broken bound`
    when it lies wholly above 1 (the ceiling is an upper bound, so the byte count or the
    bandwidth is wrong), else `shown` when it lies at or above NEAR_CEILING, `not shown` when
    below it, `inconclusive` when it holds it."""
    name = "decode near its ceiling"
    if not row or row.get("decode_ceiling_share") is None:
        return {
            "check": name,
            "status": "unavailable",
            "evidence": "no bandwidth measurement or no byte count for this model",
        }
    share = row["decode_ceiling_share"]
    low, high = row.get("decode_ceiling_share_low"), row.get("decode_ceiling_share_high")
    spread = "" if low is None or pd.isna(low) else f" [{low:.0%}, {high:.0%}]"
    if not spread:
        low = high = share  # one invocation: its point is all the interval there is
    evidence = (
        f"{row['variant']}: decode {row['decode_tps']:.1f} tok/s = {share:.0%}{spread} of a "
        f"{row['decode_ceiling_tps']:.1f} tok/s ceiling "
        f"({row['bandwidth_gb_per_s']:.1f} GB/s / {row['decode_bytes_per_token'] / 1e6:.0f} MB "
        "per token)"
    )
    if low > 1:  # wholly above the bound, not at it
        status = "broken bound"
        evidence += ": faster than the ceiling allows, so the byte count or the bandwidth is wrong"
    else:
        status = three_way(low, high, NEAR_CEILING, CEILING_WORDS)
    return {"check": name, "status": status, "evidence": evidence}


def mechanism_checks(
    summary: pd.DataFrame, table: pd.DataFrame, bench: pd.DataFrame, design: Design
) -> list[dict]:
    chosen = experiment_intervals(design)
    checks = []
    by_variant = {(r["device"], r["model"], r["variant"]): r for r in table.to_dict("records")}
    for (device, model, baseline, treatment), rows in summary.groupby(
        ["device", "model", "baseline", "treatment"]
    ):
        phases = {r["phase"]: r for r in rows.to_dict("records")}
        where = {"device": device, "model": model, "baseline": baseline, "treatment": treatment}
        if {"prefill", "decode"} <= set(phases):
            part = bench[(bench["device"] == device) & (bench["model"] == model)]
            part_interval = with_dependence(chosen, part, design).interval
            gap = gain_gap(part, baseline, treatment, part_interval)
            checks.append({**where, **gain_order_check(phases["prefill"], phases["decode"], gap)})
        checks.append({**where, **ceiling_check(by_variant.get((device, model, treatment)))})
    return checks


def mechanism_document(
    table: pd.DataFrame,
    summary: pd.DataFrame,
    bench: pd.DataFrame,
    bandwidth: dict,
    layouts: dict[tuple[str, str], dict],
    design: Design,
) -> dict:
    models: dict[str, dict] = {}  # model -> format -> its layout (MNN's export; the GGUF)
    for (model, fmt), layout in sorted(layouts.items()):
        models.setdefault(model, {})[fmt] = layout
    return {
        "experiment": design.name,
        "rules": {
            "ceiling": mnn_layout.__doc__.strip(),
            "checks": __doc__.strip(),
            "near_ceiling": NEAR_CEILING,
        },
        "bandwidth": [
            {"device": d, "engine": e, **v} for (d, e, t), v in sorted(bandwidth.items()) if t
        ],
        "models": models,
        "variants": table.replace({np.nan: None}).to_dict(orient="records"),
        "energy": energy_comparison(bench, design),
        "energy_conditions": energy_conditions(bench),
        "checks": mechanism_checks(summary, table, bench, design),
    }
