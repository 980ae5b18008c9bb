"""The Markdown summary results/<experiment>/summary.md: provenance, checks, results, verdicts."""

from __future__ import annotations

import re

import pandas as pd

from mnnrepro.analysis import verdict as vd
from mnnrepro.analysis.attribution import where_time_goes
from mnnrepro.config import comparison_pairs
from mnnrepro.stats import reps_text

OTHER_LOAD_WARNING = 0.25  # CPUs busy with other work during an invocation


def _pct(x) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{x:+.1%}"


def emulation_section(tables: list[pd.DataFrame]) -> list[str]:
    from mnnrepro.analysis.correctness import (
        CRASHED,
        IDENTICAL,
        NEAR_TIE_RULE,
        ROUNDING,
        TEACHER_FORCED_RULE,
        WRONG,
    )

    references = sorted({r for table in tables for r in table["reference"].dropna()})
    rows = pd.concat(tables, ignore_index=True)
    if "teacher_forced" not in rows:
        rows["teacher_forced"] = False
    rows["teacher_forced"] = rows["teacher_forced"].fillna(False).astype(bool)
    # the reference device compared with itself, and a crash, are never teacher-forced:
    # the rule text says how the other rows were judged
    judged = rows[(rows["device"] != rows["reference"]) & (rows["judged"] != CRASHED)]
    if judged.empty or judged["teacher_forced"].all():
        rule = TEACHER_FORCED_RULE
    elif not judged["teacher_forced"].any():
        rule = f"Judged at the first divergence: {NEAR_TIE_RULE}"
    else:
        free = sorted(set(judged[~judged["teacher_forced"]]["device"]))
        rule = (
            f"{TEACHER_FORCED_RULE} Devices {free} have records from before teacher forcing: "
            f"judged at the first divergence of their free-running answers: {NEAR_TIE_RULE}"
        )
    rule += (
        " The reference device's own rows compare it with itself; a crashed answer is "
        "counted as crashed, not judged."
    )
    out = [
        "",
        "## Emulated SME2 checks (QEMU)",
        "",
        f"Greedy tokens of every device compared with the reference device "
        f"({', '.join(f'`{r}`' for r in references)}), per variant and prompt. {rule} "
        "Emulated timings are recorded but never judged.",
        "",
        "| model | device | variant | SME vector length | sme2 | identical | rounding | "
        "wrong | crashed | earliest divergence |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for table in tables:
        order = table.assign(vl=table["sme_vector_length_bits"].fillna(0))
        groups = sorted(
            order.groupby(["model", "device", "variant"]),
            key=lambda kv: (kv[0][0], kv[1]["vl"].iloc[0], kv[0][1], kv[0][2]),
        )
        for (model, device, variant), g in groups:
            forced = bool(g["teacher_forced"].fillna(False).astype(bool).all())
            column = "first_top1_difference" if forced else "first_divergence"
            first = g[column].dropna()
            vl = g["sme_vector_length_bits"].iloc[0]
            vl_text = "-" if pd.isna(vl) else f"{int(vl)} bits"
            first_text = "-" if first.empty else f"token {int(first.min())}"
            kinds = g["judged"].value_counts() if "judged" in g else pd.Series(dtype=int)
            counts = " | ".join(
                f"{int(kinds.get(kind, 0))}/{len(g)}"
                for kind in (IDENTICAL, ROUNDING, WRONG, CRASHED)
            )
            out.append(
                f"| {model} | {device} | {variant} | {vl_text} | "
                f"{'yes' if g['sme2'].iloc[0] else 'no'} | {counts} | {first_text} |"
            )
    return out


def header_section(document: dict) -> list[str]:
    comp, bench = document["comparison"], document["bench"]
    pairs = "".join(f", and `{p['treatment']}` vs `{p['baseline']}`" for p in comp.get("also", []))
    return [
        f"# mnn-sme2-repro: experiment `{document['experiment']}`",
        "",
        f"Treatment `{comp['treatment']}` vs baseline `{comp['baseline']}`{pairs}; "
        f"prefill {bench['prompt_tokens']} tokens, decode {bench['generate_tokens']} "
        f"tokens, {repetitions_text(bench['repetitions'])} per variant "
        f"(one fresh engine process each, {bench['warmup']} warm-up run inside).",
    ]


def stop_text(reason) -> str:
    return reason if isinstance(reason, str) else ""


def repetitions_text(repetitions) -> str:
    if isinstance(repetitions, dict):
        return (
            f"{repetitions['min']}-{repetitions['max']} interleaved repetitions (precision on "
            f"demand: until every CI half-width is at most {repetitions['target_half_width']:.1%})"
        )
    return f"{repetitions} interleaved repetitions"


def conditions(row) -> str:
    """'quiet', or 'under load (k/n blocks)': the quiet gate's and the run's own load; and
    how many invocations were measured again (re-measurement is part of the record)."""
    loaded = getattr(row, "blocks_under_load", 0)
    text = (
        "quiet"
        if pd.isna(loaded) or not loaded
        else (f"**under load** ({int(loaded)}/{row.n_pairs} blocks)")
    )
    hot = getattr(row, "hot_starts", None)
    if hot is not None and not pd.isna(hot) and int(hot):
        text += f"; **{int(hot)} invocations started hot** (above bench.max_temp_c)"
    ungated = getattr(row, "thermal_ungated", None)
    if ungated is not None and not pd.isna(ungated) and int(ungated):
        text += (
            f"; **no temperature to gate on** before {int(ungated)} invocations "
            "(the thermal gate could not wait: see bench.thermal_zones)"
        )
    again = getattr(row, "remeasured_invocations", None)
    if again is not None and not pd.isna(again) and int(again):
        text += f"; **{int(again)} invocations re-measured** ({row.remeasurements})"
    return text


def order_text(row) -> str:
    """'b/t' blocks in which the baseline / the treatment ran first; '-' for an archive that
    predates the count."""
    first = getattr(row, "baseline_first_blocks", None)
    second = getattr(row, "treatment_first_blocks", None)
    if first is None or second is None or pd.isna(first) or pd.isna(second):
        return "-"
    text = f"{int(first)}/{int(second)}"
    return text if abs(int(first) - int(second)) <= 1 else f"**{text} unbalanced**"


def verdicts_section(summary: pd.DataFrame, document: dict) -> list[str]:
    out = [
        "",
        "## Verdicts",
        "",
        "| device | model | treatment vs baseline | phase | gain | CI | expectation | measured "
        "| ran first (baseline/treatment) | verdict |",
        "|---|---|---|---|---:|---|---|---|---|---|",
    ]
    for row in summary.itertuples():
        ci = f"[{_pct(row.gain_ci_low)}, {_pct(row.gain_ci_high)}]"
        expected = (
            f"claim {_pct(row.claim_gain)} ± {row.tolerance:.0%}"
            if not pd.isna(row.claim_gain)
            else f"{row.expectation} (± {row.tolerance:.0%})"
        )
        reference = getattr(row, "reference_gain", None)  # absent in older archives
        if reference is not None and not pd.isna(reference):
            expected = f"no claim; reference {_pct(reference)}, not judged"
        has_reason = isinstance(row.verdict_reason, str) and row.verdict_reason
        reason = f" ({row.verdict_reason})" if has_reason else ""
        out.append(
            f"| {row.device} | {row.model} | {row.treatment} vs {row.baseline} | {row.phase} | "
            f"{_pct(row.gain)} | {ci} | {expected} | {conditions(row)} | {order_text(row)} | "
            f"**{row.verdict}**{reason} |"
        )
    out += [
        "",
        f"Rule: {document.get('verdict_rule', vd.RULE)}",
        "",
        "Order: blocks in which each ran first, as recorded; the schedule (a Williams design) "
        "runs every pair each way equally often, off by one block at most.",
    ]
    comparison = document["comparison"]
    if comparison.get("source"):
        what = "Claim" if comparison.get("claims") else "Reference figures' source"
        out += ["", f"{what}: {comparison['source']}"]
    return out


def side_by_side_section(summary: pd.DataFrame) -> list[str]:
    """Every compared pair's gain per phase, one column per pair: the engines' SME2 gains side
    by side (e.g. MNN's two builds, MNN masked vs allowed, llama.cpp's KleidiAI switch)."""
    pairs = list(dict.fromkeys(f"{r.treatment} vs {r.baseline}" for r in summary.itertuples()))
    if len(pairs) < 2:
        return []
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in summary.itertuples():
        key = (row.device, row.model, row.phase)
        cells.setdefault(key, {})[f"{row.treatment} vs {row.baseline}"] = (
            f"{_pct(row.gain)} [{_pct(row.gain_ci_low)}, {_pct(row.gain_ci_high)}] {row.verdict}"
        )
    out = [
        "",
        "## Gains side by side",
        "",
        "Gain (treatment over baseline) with its CI and verdict, per pair; a pair of another "
        "engine is a control: the same device, model and phase with that engine's SME2 kernels.",
        "",
        "| device | model | phase | " + " | ".join(pairs) + " |",
        "|---|---|---|" + "---|" * len(pairs),
    ]
    for (device, model, phase), by_pair in cells.items():
        row = " | ".join(by_pair.get(p, "-") for p in pairs)
        out.append(f"| {device} | {model} | {phase} | {row} |")
    return out


def validity_section(document: dict) -> list[str]:
    out = ["", "## Validity checks", ""]
    for item in document["validity"]:
        for check in item["checks"]:
            mark = "pass" if check["passed"] else "**FAIL**"
            out.append(
                f"- {item['device']} / {item['model']}: {check['name']}: {mark} — "
                f"{check['evidence']}"
            )
    return out


def statistics_section(summary: pd.DataFrame, document: dict, facts: dict) -> list[str]:
    stats = document["stats"]
    out = [
        "",
        "## Statistics",
        "",
        f"{document['speedup_method']}. {stats['ci_level']:.0%} level; interval: "
        f"{', '.join(sorted(set(summary['interval'])))}. Measured coverage of the t interval "
        "at a nominal 95 %: >= 93 % at 6-20 blocks with log-normal, heavy-tailed and drifting "
        "noise (benchmarks/results/ci_coverage.md).",
        "",
        "| device | model | treatment vs baseline | phase | n | median base tok/s | "
        "median treat tok/s | CV base | CV treat | speedup | p (Wilcoxon) | CI half-width | "
        "reps for target | max other load | blocks: why stopped |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in summary.itertuples():
        other = "—" if pd.isna(row.max_other_load) else f"{row.max_other_load:.2f} CPUs"
        out.append(
            f"| {row.device} | {row.model} | {row.treatment} vs {row.baseline} | {row.phase} | "
            f"{row.n_pairs} | {row.median_baseline_tps:.2f} | {row.median_treatment_tps:.2f} | "
            f"{row.cv_baseline:.1%} | {row.cv_treatment:.1%} | {row.ratio:.3f} | "
            f"{row.p_wilcoxon:.2g} | {row.half_width_rel:.1%} | {reps_text(row.reps_for_target)} | "
            f"{other} | {stop_text(row.blocks_stop_reason)} |"
        )
    busy = summary[summary["max_other_load"].fillna(0) >= OTHER_LOAD_WARNING]
    if len(busy):
        out += [
            "",
            f"**Warning:** other work kept up to {busy['max_other_load'].max():.2f} CPUs busy "
            f"during some invocations on {', '.join(sorted(set(busy['device'])))} (column "
            "`other_load` in `bench.csv`): those timings shared the CPUs. Measure on a quiet "
            "machine, or check that the CI is still narrow enough.",
        ]
    out += [
        "",
        "Max other load: CPUs busy with work other than the engine while an invocation ran "
        "(local and emulated devices; — where the device cannot tell).",
    ]
    emulated = sorted(name for name, fact in facts.items() if fact.get("emulated"))
    if emulated:
        out += [
            "",
            f"Emulated devices ({', '.join(emulated)}): timings are in `bench.csv` and "
            "the plots, and never enter a speedup or a verdict.",
        ]
    return out


COMMIT = re.compile(r"[0-9a-f]{40}")


def model_pin(manifest: dict) -> str:
    """How a downloaded model is pinned: its revision, and a warning where that is a name
    that moves (a branch such as `master`) or where the file hashes were trusted on first use."""
    if manifest.get("source") != "modelscope":
        return ""
    revision, resolved = manifest.get("revision"), manifest.get("resolved_commit")
    text = f"; {manifest['id']} at revision `{revision}`"
    if not COMMIT.fullmatch(str(revision)):
        text += (
            f" (**not a commit**: a name that moves; it resolved to `{resolved}`)"
            if resolved
            else " (**not a commit**: a name that moves; its commit could not be listed)"
        )
    if manifest.get("hashes") != "pinned":
        text += "; file hashes **trusted on first use** (docs/paper.md: pinning a model)"
    return text


def provenance_section(facts: dict, engines: dict, models: dict) -> list[str]:
    out = ["", "## Provenance", ""]
    for name, engine in sorted(engines.items()):
        out.append(
            f"- engine `{name}`: {engine['kind']} {engine['pin']} "
            f"({len(engine['files'])} files hashed)"
        )
    for name, manifest in sorted(models.items()):
        total = sum(f["size"] for f in manifest["files"])
        out.append(
            f"- model `{name}`: {manifest['source']}, {len(manifest['files'])} files, "
            f"{total / 2**20:.1f} MiB, exporter {manifest['exporter']['package']} "
            f"{manifest['exporter']['version']}{model_pin(manifest)}"
        )
    for name, fact in sorted(facts.items()):
        out.append(
            f"- device `{name}` ({fact['kind']}{', emulated' if fact['emulated'] else ''}): "
            f"{fact['cpu_model']}, {fact['cpu_count']} CPUs, {fact['os']}, "
            f"sme2 {'yes' if fact['sme2'] else 'no'}"
            + (
                f", firmware `{fact['fingerprint']}` (security patch {fact.get('security_patch')})"
                if fact.get("fingerprint")
                else ""
            )
        )
    out += [
        "",
        "Plots: `plots/runs.html`, `plots/speedup.html`, `plots/temperature.html` "
        "(PNG beside them). Tables: `bench.csv`, `summary.csv`, `summary.json`.",
        "",
    ]
    return out


def _num(x, fmt: str) -> str:
    return "n/a" if x is None or pd.isna(x) else format(x, fmt)


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
    for r in mechanism["variants"]:
        mb = None if r["decode_bytes_per_token"] is None else r["decode_bytes_per_token"] / 1e6
        bandwidth = _num(r["bandwidth_gb_per_s"], ".1f")
        if r["bandwidth_samples"]:
            bandwidth += f" ({r['bandwidth_threads']} thr, {r['bandwidth_samples']})"
        out.append(
            f"| {r['device']} | {r['model']} | {r['variant']} | {_num(r['decode_tps'], '.2f')} "
            f"| {_num(mb, '.0f')} | {bandwidth} | {_num(r['decode_ceiling_tps'], '.1f')} | "
            f"{_num(r['decode_ceiling_share'], '.0%')} | {_num(r['prefill_tps'], '.2f')} | "
            f"{_num(r['prefill_gops'], '.1f')} | {_num(r['prefill_joules_per_token'], '.3g')} "
            f"| {_num(r['decode_joules_per_token'], '.3g')} |"
        )
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
    if sweep is not None and len(sweep):
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
                f"{r['generate_tokens']} | {threads} | {r['phase']} | {_pct(r['gain'])} | "
                f"[{_pct(r['gain_ci_low'])}, {_pct(r['gain_ci_high'])}] | "
                f"{conditions(pd.Series(r))} | {sweep_checks_text(r)} |"
            )
    return out


def markdown(
    summary: pd.DataFrame,
    document: dict,
    facts: dict[str, dict],
    engines: dict[str, dict],
    models: dict[str, dict],
    emulation: list[pd.DataFrame] = (),
    mechanism: dict | None = None,
    sweep: pd.DataFrame | None = None,
    kernels: pd.DataFrame | None = None,
    top: int = 6,
) -> str:
    """summary.md: one function per section."""
    return "\n".join(
        [
            *header_section(document),
            *verdicts_section(summary, document),
            *side_by_side_section(summary),
            *validity_section(document),
            *(emulation_section(list(emulation)) if len(emulation) else []),
            *statistics_section(summary, document, facts),
            *(mechanism_section(mechanism, sweep) if mechanism else []),
            *(
                where_time_goes(kernels, top, comparison_pairs(document["comparison"]))
                if kernels is not None
                else []
            ),
            *provenance_section(facts, engines, models),
        ]
    )
