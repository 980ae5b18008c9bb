"""The Markdown summary results/<experiment>/summary.md: provenance, checks, results, verdicts."""

from __future__ import annotations

import pandas as pd

from mnnrepro.analysis import verdict as vd

OTHER_LOAD_WARNING = 0.25  # CPUs busy with other work during an invocation


def _pct(x) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{x:+.1%}"


def emulation_section(tables: list[pd.DataFrame]) -> list[str]:
    from mnnrepro.analysis.correctness import CRASHED, IDENTICAL, NEAR_TIE_RULE, ROUNDING, WRONG

    references = sorted({r for table in tables for r in table["reference"].dropna()})
    out = [
        "",
        "## Emulated SME2 checks (QEMU)",
        "",
        f"Greedy tokens of every device compared with the reference device "
        f"({', '.join(f'`{r}`' for r in references)}), per variant and prompt; each "
        f"divergence judged by the near-tie rule: {NEAR_TIE_RULE} Emulated timings are "
        "recorded but never judged.",
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
            first = g["first_divergence"].dropna()
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
    """'quiet', or 'under load (k/n blocks)': the quiet gate's and the run's own load."""
    loaded = getattr(row, "blocks_under_load", 0)
    if pd.isna(loaded) or not loaded:
        return "quiet"
    return f"**under load** ({int(loaded)}/{row.n_pairs} blocks)"


def verdicts_section(summary: pd.DataFrame, document: dict) -> list[str]:
    out = [
        "",
        "## Verdicts",
        "",
        "| device | model | treatment vs baseline | phase | gain | CI | expectation | measured "
        "| verdict |",
        "|---|---|---|---|---:|---|---|---|---|",
    ]
    for row in summary.itertuples():
        ci = f"[{_pct(row.gain_ci_low)}, {_pct(row.gain_ci_high)}]"
        expected = (
            f"claim {_pct(row.claim_gain)} ± {row.tolerance:.0%}"
            if not pd.isna(row.claim_gain)
            else f"{row.expectation} (± {row.tolerance:.0%})"
        )
        has_reason = isinstance(row.verdict_reason, str) and row.verdict_reason
        reason = f" ({row.verdict_reason})" if has_reason else ""
        out.append(
            f"| {row.device} | {row.model} | {row.treatment} vs {row.baseline} | {row.phase} | "
            f"{_pct(row.gain)} | {ci} | {expected} | {conditions(row)} | "
            f"**{row.verdict}**{reason} |"
        )
    out += ["", f"Rule: {document.get('verdict_rule', vd.RULE)}"]
    if document["comparison"].get("source"):
        out += ["", f"Claim source: {document['comparison']['source']}"]
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
            f"{row.p_wilcoxon:.2g} | {row.half_width_rel:.1%} | {row.reps_for_target} | "
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
            f"{manifest['exporter']['version']}"
        )
    for name, fact in sorted(facts.items()):
        out.append(
            f"- device `{name}` ({fact['kind']}{', emulated' if fact['emulated'] else ''}): "
            f"{fact['cpu_model']}, {fact['cpu_count']} CPUs, {fact['os']}, "
            f"sme2 {'yes' if fact['sme2'] else 'no'}"
        )
    out += [
        "",
        "Plots: `plots/runs.html`, `plots/speedup.html`, `plots/temperature.html` "
        "(PNG beside them). Tables: `bench.csv`, `summary.csv`, `summary.json`.",
        "",
    ]
    return out


def markdown(
    summary: pd.DataFrame,
    document: dict,
    facts: dict[str, dict],
    engines: dict[str, dict],
    models: dict[str, dict],
    emulation: list[pd.DataFrame] = (),
) -> str:
    """summary.md: one function per section."""
    return "\n".join(
        [
            *header_section(document),
            *verdicts_section(summary, document),
            *validity_section(document),
            *(emulation_section(list(emulation)) if len(emulation) else []),
            *statistics_section(summary, document, facts),
            *provenance_section(facts, engines, models),
        ]
    )
