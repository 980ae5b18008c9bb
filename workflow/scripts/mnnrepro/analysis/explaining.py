"""The report's section "Explaining the gain": the mechanism checks, the decode ceiling,
prefill arithmetic, energy per token and the sweep (mechanism.json, sweep/summary.csv)."""

from __future__ import annotations

import pandas as pd

from mnnrepro.analysis.text import conditions, num, pct


def energy_flags(mechanism: dict) -> list[str]:
    """Which window each phase's power came from, and what makes a figure doubtful: a
    fallback to the invocation's mean power, a phone that was charging."""
    out = [
        "",
        "Energy is unvalidated: no figure here has been checked against an external meter.",
    ]
    for c in mechanism.get("energy_conditions", []):
        text = (
            f"{c['device']} / {c['variant']}: {c['recorded']} phase windows recorded by the "
            f"runner, {c['inferred']} inferred (phases back to back at the invocation's end)"
        )
        if c["invocation_mean"]:
            text += f", **{c['invocation_mean']} fell back to the invocation's mean power**"
        if c["charging_invocations"]:
            text += (
                f"; **charging during {c['charging_invocations']} invocations** (the battery "
                "current is then the charger's balance, not what the SoC draws)"
            )
        out += ["", text + "."]
    return out


def sweep_checks_text(row: dict) -> str:
    if "checks_passed" not in row or pd.isna(row["checks_passed"]):
        return "-"  # an archive that predates the column
    if row["checks_passed"] in (True, "True"):
        return "passed"
    problems = row.get("problems")
    return "**failed**" + (f": {problems}" if isinstance(problems, str) and problems else "")


def mechanism_section(mechanism: dict, sweep: pd.DataFrame | None) -> list[str]:
    """Explaining the gain: the mechanism checks with their evidence, each variant against
    its decode ceiling, prefill arithmetic, energy per token, and the sweep."""
    out = [
        "",
        "## Explaining the gain",
        "",
        "The seed's mechanism, stated as checks: prefill (compute-bound: matrix x matrix) gains "
        "more than decode (memory-bound: matrix x vector), and decode runs near the speed the "
        "measured memory bandwidth allows (its ceiling; at least "
        f"{mechanism['rules']['near_ceiling']:.0%} counts as near). Rules: "
        "`mechanism.json` (`rules`).",
        "",
        "| device | model | treatment vs baseline | check | status | evidence |",
        "|---|---|---|---|---|---|",
    ]
    for c in mechanism["checks"]:
        out.append(
            f"| {c['device']} | {c['model']} | {c['treatment']} vs {c['baseline']} | "
            f"{c['check']} | **{c['status']}** | {c['evidence']} |"
        )
    out += ceiling_section(mechanism["variants"])
    out += vision_arithmetic(mechanism["variants"])
    out += energy_section(mechanism)
    if sweep is not None and len(sweep):
        out += sweep_section(sweep)
    return out


def ceiling_section(variants: list[dict]) -> list[str]:
    """Each variant against its decode ceiling, and its prefill arithmetic."""
    out: list[str] = []
    out += [
        "",
        "### Decode ceiling and prefill arithmetic",
        "",
        "Ceiling = median read bandwidth at the variant's thread count (bandwidth_probe, every "
        "sample in `bandwidth/<device>.json`) / bytes a decode step reads (weights and "
        "quantization "
        "scales of the language model, one embedding row; KV cache not counted, so the "
        "ceiling is an upper bound). Prefill GOPS = 2 x decoder matrix weights x prefill tok/s.",
        "",
        "| device | model | variant | decode tok/s | MB / token | GB/s (threads, samples) | "
        "ceiling "
        "tok/s | share | prefill tok/s | prefill GOPS | J / prefill token | J / decode token |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in variants:
        mb = None if r["decode_bytes_per_token"] is None else r["decode_bytes_per_token"] / 1e6
        bandwidth = num(r["bandwidth_gb_per_s"], ".1f")
        if r["bandwidth_samples"]:
            bandwidth += f" ({r['bandwidth_threads']} thr, {r['bandwidth_samples']})"
        out.append(
            f"| {r['device']} | {r['model']} | {r['variant']} | {num(r['decode_tps'], '.2f')} "
            f"| {num(mb, '.0f')} | {bandwidth} | {num(r['decode_ceiling_tps'], '.1f')} | "
            f"{num(r['decode_ceiling_share'], '.0%')} | {num(r['prefill_tps'], '.2f')} | "
            f"{num(r['prefill_gops'], '.1f')} | {num(r['prefill_joules_per_token'], '.3g')} "
            f"| {num(r['decode_joules_per_token'], '.3g')} |"
        )
    return out


def energy_section(mechanism: dict) -> list[str]:
    """Tokens per joule, treatment over baseline, where power was read."""
    out: list[str] = []
    sources = sorted({r["power_source"] for r in mechanism["variants"] if r["power_source"]})
    out += ["", "### Energy per token", ""]
    if mechanism["energy"]:
        out += [
            "Tokens per joule, treatment / baseline, with the speedup's paired statistics "
            "(power sampled during each invocation; a phase's joules are its mean power x its "
            "seconds).",
            "",
            "| device | model | treatment vs baseline | phase | J/token baseline | "
            "J/token treatment | tokens/J ratio | CI |",
            "|---|---|---|---|---:|---:|---:|---|",
        ]
        for e in mechanism["energy"]:
            out.append(
                f"| {e['device']} | {e['model']} | {e['treatment']} vs {e['baseline']} | "
                f"{e['phase']} | {e['baseline_joules_per_token']:.3g} | "
                f"{e['treatment_joules_per_token']:.3g} | {e['tokens_per_joule_ratio']:.3f} | "
                f"[{e['ci_low']:.3f}, {e['ci_high']:.3f}] |"
            )
        out += ["", f"Power source: {'; '.join(sources)}.", *energy_flags(mechanism)]
    else:
        out.append(
            "Not available: " + ("; ".join(sources) or "no power readings were recorded") + "."
        )
    return out


def sweep_section(sweep: pd.DataFrame) -> list[str]:
    """Every sweep point's gain (the main one judged)."""
    out: list[str] = []
    out += [
        "",
        "### Sweep",
        "",
        "Every point is its own interleaved comparison (`sweep/summary.csv`, plot "
        "`plots/sweep.png`); `main` is the judged point.",
        "",
        "| device | model | point | P | N | threads | phase | gain | CI | measured | checks |",
        "|---|---|---|---:|---:|---:|---|---:|---|---|---|",
    ]
    for r in sweep.to_dict("records"):
        threads = "-" if pd.isna(r["thread_num"]) else int(r["thread_num"])
        out.append(
            f"| {r['device']} | {r['model']} | {r['point']} | {r['prompt_tokens']} | "
            f"{r['generate_tokens']} | {threads} | {r['phase']} | {pct(r['gain'])} | "
            f"[{pct(r['gain_ci_low'])}, {pct(r['gain_ci_high'])}] | "
            f"{conditions(pd.Series(r))} | {sweep_checks_text(r)} |"
        )
    return out


def vision_arithmetic(variants: list[dict]) -> list[str]:
    """The vision encoder's GOPS (a vision model): 2 x its matrix weights per patch, from the
    checkpoint's dimensions (models/mnn_layout.py), x image tokens per second."""
    rows = [r for r in variants if not pd.isna(r.get("vision_tps"))]
    if not rows:
        return []
    out = [
        "",
        "Vision encoder (the image questions' `vision` phase): GOPS = operations of its matrix "
        "products per image token (from the checkpoint's dimensions; n/a for a model downloaded "
        "already converted) x image tokens/s; MP/s = pixels encoded / s.",
        "",
        "| device | model | variant | image tokens/s | MP/s | GOP / image token | vision GOPS |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        ops = r["vision_ops_per_image_token"]
        out.append(
            f"| {r['device']} | {r['model']} | {r['variant']} | {num(r['vision_tps'], '.1f')} | "
            f"{num(r['vision_mp_per_s'], '.3g')} | {num(ops and ops / 1e9, '.3g')} | "
            f"{num(r['vision_gops'], '.2f')} |"
        )
    return out
