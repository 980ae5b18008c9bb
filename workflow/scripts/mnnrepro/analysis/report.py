"""The Markdown summary results/<experiment>/summary.md: provenance, checks, results, verdicts."""

from __future__ import annotations

import pandas as pd

from mnnrepro.analysis import verdict as vd
from mnnrepro.analysis.emulation import emulation_section
from mnnrepro.analysis.engine_tests import engine_tests_section
from mnnrepro.analysis.explaining import mechanism_section
from mnnrepro.analysis.kernel_sections import where_time_goes
from mnnrepro.analysis.prediction_score import prediction_section
from mnnrepro.analysis.side_by_side import side_by_side_section
from mnnrepro.analysis.text import OTHER_LOAD_WARNING, conditions, pct, reps_text
from mnnrepro.analysis.vision import vision_section
from mnnrepro.config import is_full_commit
from mnnrepro.design import Comparison
from mnnrepro.repetitions import Repetitions


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
    repetitions = Repetitions.of(repetitions)
    if repetitions.fixed:
        return f"{repetitions.max} interleaved repetitions"
    span = f"{repetitions.min}-{repetitions.max} interleaved repetitions"
    target = repetitions.target_half_width
    if not repetitions.stops_on_verdict:
        return f"{span} (precision on demand: until every CI half-width is at most {target:.1%})"
    rows = (
        f"a row without a claim once its half-width is at most {target:.1%}"
        if target is not None
        else "a row without a claim holds nothing up"
    )
    budget = repetitions.budget_s
    limit = f", or {budget:g} s of device time" if budget is not None else ""
    looks = repetitions.planned_looks()
    at = f", judged after blocks {', '.join(map(str, looks))} only" if looks else ""
    return f"{span} (until every judged verdict is settled{limit}{at}; {rows})"


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
        ci = f"[{pct(row.gain_ci_low)}, {pct(row.gain_ci_high)}]"
        if not pd.isna(row.claim_gain):
            expected = f"claim {pct(row.claim_gain)} ± {row.tolerance:.0%}"
        elif row.expectation == "claim":  # judged against a claim, and none is made here
            expected = "no claim"
        else:
            expected = f"{row.expectation} (± {row.tolerance:.0%})"
        reference = getattr(row, "reference_gain", None)  # absent in older archives
        if reference is not None and not pd.isna(reference):
            expected = f"no claim; reference {pct(reference)}, not judged"
        has_reason = isinstance(row.verdict_reason, str) and row.verdict_reason
        reason = f" ({row.verdict_reason})" if has_reason else ""
        out.append(
            f"| {row.device} | {row.model} | {row.treatment} vs {row.baseline} | {row.phase} | "
            f"{pct(row.gain)} | {ci} | {expected} | {conditions(row)} | {order_text(row)} | "
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


def assumptions_section(summary: pd.DataFrame) -> list[str]:
    """What each interval's level means and what it assumes, checked on the blocks
    (stats.assumption_checks; columns a replay of an older archive may not have)."""
    if "row_level" not in summary or summary.empty:
        return []
    first = summary.iloc[0]
    family = int(first["family_rows"])
    meaning = (
        f"all {family} rows of a device and model at once hold their gains with "
        f"{1 - (1 - first['row_level']) * family:.0%} (each at {first['row_level']:.2%}, "
        "Bonferroni: `stats.familywise`)"
        if family > 1
        else f"each row's interval holds its own gain with {first['row_level']:.0%}; over "
        f"{len(summary)} rows some miss more often (`stats.familywise: true` for the "
        "experiment's rows at once)"
    )
    out = [
        "",
        "### What the level means, and what the intervals assume",
        "",
        f"Level: {meaning}; after a run that stopped on its verdict, at whichever look it "
        "stopped. The intervals assume independent blocks: one check per run (the largest "
        "lag-1 autocorrelation of its rows against permuted block orders) widens every "
        "interval by its row's AR(1) factor where it finds dependence "
        "(`stats.dependence`). Lag-1 and runs p-values are one-sided (positive dependence, "
        "too few runs); order: Welch p of the gain where the treatment ran first vs second; "
        "kurtosis: excess (0 for Gaussian blocks). Gain at the stop: bias-adjusted for "
        "stopping on the verdict (Whitehead), beside the plain gain it corrects.",
        "",
        "| device | model | treatment vs baseline | phase | dependence p (run) | lag-1 r "
        "| lag-1 p | runs p | order p | excess kurtosis | widened by | gain | "
        "gain, bias-adjusted |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in summary.itertuples():
        found = " **found**" if row.serial_dependence else ""
        out.append(
            f"| {row.device} | {row.model} | {row.treatment} vs {row.baseline} | {row.phase} | "
            f"{number(row.dependence_p)}{found} | {number(row.lag1_autocorrelation)} | "
            f"{number(row.lag1_p)} | {number(row.runs_p)} | {number(row.order_effect_p)} | "
            f"{number(row.excess_kurtosis)} | {row.dependence_widening:.2f}x | {pct(row.gain)} "
            f"| {'-' if pd.isna(row.gain_bias_adjusted) else pct(row.gain_bias_adjusted)} |"
        )
    return out


def number(value) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:.2g}"


def model_pin(manifest: dict) -> str:
    """How a downloaded model is pinned: its revision, and a warning where that is a name
    that moves (a branch such as `master`) or where the file hashes were trusted on first use."""
    if manifest.get("source") != "modelscope":
        return ""
    revision, resolved = manifest.get("revision"), manifest.get("resolved_commit")
    text = f"; {manifest['id']} at revision `{revision}`"
    if not is_full_commit(revision):
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
            f"- engine `{name}`: {engine.kind.provenance(engine)} "
            f"({len(engine.files)} files hashed)"
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
    engine_tests: pd.DataFrame | None = None,
    preface: list[str] = (),
    prediction: dict | None = None,
    variant_engines: dict[str, str] | None = None,
) -> str:
    """summary.md: one function per section; `preface` right after the title (a replay's
    says there what it checked)."""
    title, *header = header_section(document)
    return "\n".join(
        [
            title,
            *preface,
            *header,
            *verdicts_section(summary, document),
            *side_by_side_section(summary, engines, variant_engines or {}),
            *(prediction_section(prediction, summary) if prediction else []),
            *vision_section(summary, document),
            *validity_section(document),
            *(emulation_section(list(emulation)) if len(emulation) else []),
            *(engine_tests_section(engine_tests) if engine_tests is not None else []),
            *statistics_section(summary, document, facts),
            *assumptions_section(summary),
            *(mechanism_section(mechanism, sweep) if mechanism else []),
            *(
                where_time_goes(
                    kernels,
                    top,
                    Comparison.of(document["comparison"]).pair_names,
                )
                if kernels is not None
                else []
            ),
            *provenance_section(facts, engines, models),
        ]
    )
