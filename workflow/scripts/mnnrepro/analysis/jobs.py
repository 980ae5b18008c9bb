"""What the analysis rules' jobs do, each handed its job (mnnrepro/job.Job: its input, output and
params, named as the rule names them): the summary (compute_summary), the sweep's summary
(compute_sweep_summary), the charts (plot) and the report (write_summary_report). Their scripts
only call these; the work is in analysis/summary.py, sweep.py, plots.py and report.py."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from mnnrepro.design import Design
from mnnrepro.files import read_json, sha256_file, sha256_text, write_json
from mnnrepro.records import chain, check_same_table, read_chained_table, read_record, read_table

log = logging.getLogger(__name__)
DERIVE_AGAIN = "delete it to derive it again"


def records_of(paths, kind: str, key) -> dict:
    """The records of kind at paths, by key(record)."""
    return {key(r): r for r in (read_record(p, kind) for p in paths)}


def write_summary(job, mapper) -> None:
    """summary.csv and summary.json from bench.csv, which must be exactly what the raw
    records (hash-checked against their index; mapper: where a recorded raw path is now,
    archive.replay.raw_path_mapper) give."""
    # per job: each job imports its own stage's modules (0.2-0.4 s each if all)
    from mnnrepro.analysis.summary import summarize, summary_document
    from mnnrepro.analysis.tables import BENCH_COLUMNS, bench_table_from
    from mnnrepro.engines.pairs import device_modes

    given, params = job.input, job.params
    design = Design.of(params.design)
    derived = bench_table_from(given.runs, mapper, params.max_other_load)
    check_same_table(given.table, derived, "the raw records", DERIVE_AGAIN)
    table = read_table(given.table, BENCH_COLUMNS, DERIVE_AGAIN)
    validity = records_of(given.validity, "validity", lambda v: (v["device"], v["model"]))
    indexes = [read_record(p, "run_index") for p in given.runs]
    stopping = {(i["device"], i["model"]): i.get("stopping") for i in indexes}
    modes = device_modes([read_record(p, "pair_modes") for p in given.modes])
    prediction = optional(given.prediction, lambda p: read_json(p[0]))
    summary = summarize(table, validity, design, modes, stopping, prediction)
    summary.to_csv(job.output.table, index=False)
    document = summary_document(summary, validity, design)
    document["chain"] = chain(
        {
            "bench.csv": given.table,
            "summary.csv": job.output.table,
            **dict(zip(["kernels.csv"], given.kernels, strict=False)),
        }
    )
    write_json(job.output.document, document)


def write_sweep_summary(job, mapper) -> None:
    """sweep/summary.csv and .json from sweep/bench.csv, which must be exactly what the
    sweep's raw records give (mapper: as write_summary's), beside the main point's summary."""
    # per job: each job imports its own stage's modules (0.2-0.4 s each if all)
    from mnnrepro.analysis.sweep import main_checks, sweep_summary, sweep_table

    given, params = job.input, job.params
    design = Design.of(params.design)
    derived = sweep_table(given.runs, mapper, params.max_other_load)
    check_same_table(given.table, derived, "the sweep's raw records", DERIVE_AGAIN)
    sweep = read_table(given.table, [], DERIVE_AGAIN)
    main = read_chained_table(given.main, given.document)
    checks = main_checks(read_record(given.document, "summary"))
    summary = sweep_summary(sweep, main, design, checks)
    summary.to_csv(job.output.table, index=False)
    document = {
        "experiment": design.name,
        "sweep": design.sweep,
        "rows": summary.astype(object).where(summary.notna(), None).to_dict(orient="records"),
        "chain": chain({"bench.csv": given.table, "summary.csv": job.output.table}),
    }
    write_json(job.output.document, document)


def draw_charts(job) -> None:
    """Every chart the plan asks for, as HTML and PNG; one that cannot be drawn leaves a note
    in its place (said in the job's log)."""
    # per job: each job imports its own stage's modules (0.2-0.4 s each if all)
    from mnnrepro.analysis import plots

    draw = {
        "runs": plots.runs_chart,
        "speedup": plots.speedup_chart,
        "temperature": plots.temperature_chart,
        "sweep": plots.sweep_chart,
        "kernels": plots.kernels_chart,
    }
    for chart in job.params.charts:
        path = job.input[f"{chart}_table"]
        table = read_chained_table(path, job.input[f"{chart}_document"])
        html, png = job.output[f"{chart}_html"], job.output[f"{chart}_png"]
        problem = plots.save(draw[chart](table), html, png, path)
        if problem:
            log.warning("%s chart not drawn, a note in its place: %s", chart, problem)


def optional(paths, read):
    """read(paths) where the rule has them (an optional input), else None."""
    return read(paths) if paths else None


def write_report(job, replay: list[str]) -> None:
    """summary.md from the summary and every record it cites; replay: a replay's section
    (archive.replay_check.replay_section), else empty."""
    # per job: each job imports its own stage's modules (0.2-0.4 s each if all)
    from mnnrepro.analysis.report import markdown
    from mnnrepro.engines.records import engine_records

    given = job.input

    def csv(paths):
        return pd.read_csv(paths[0], keep_default_na=False)

    text = markdown(
        read_chained_table(given.table, given.document),
        read_record(given.document, "summary"),
        records_of(given.facts, "device_facts", lambda d: d["device"]),
        engine_records(given.engines),
        records_of(given.manifests, "model_manifest", lambda m: m["model"]),
        [
            read_table(p, [], "delete it to check the emulated devices again")
            for p in given.emulation
        ],
        optional(given.mechanism, lambda p: read_json(p[0])),
        optional(given.sweep, lambda p: read_chained_table(p[0], p[1])),
        optional(given.kernels, csv),
        job.params.top,
        optional(given.engine_tests, csv),
        replay,
        optional(given.prediction, lambda p: read_json(p[0])),  # prediction.json, then .md
        Design.of(job.params.design).variant_engines,
    )
    Path(job.output.markdown).write_text(text, encoding="utf-8")


def write_prediction(job) -> None:
    """prediction.json and prediction.md (rule predict_gain): the compared pairs' gains on the
    phone, predicted here from the emulated instruction mix (with the inputs' hashes) or
    registered from a file made earlier (`prediction.registered`), bound to this run's pairs."""
    # per job: each job imports its own stage's modules (0.2-0.4 s each if all)
    from mnnrepro.analysis.cost_model import recorded_identity
    from mnnrepro.analysis.prediction_score import (
        bound_to_run,
        registered_prediction,
        variant_settings,
    )
    from mnnrepro.analysis.prediction_text import prediction_markdown
    from mnnrepro.models.shapes import measured_identities

    design = Design.of(job.params.design)
    variants = variant_settings(job.params.variants)
    manifests = [read_record(p, "model_manifest") for p in job.input.manifests]
    registered = getattr(job.input, "registered", None)
    if registered:
        document = registered_prediction(registered, job.params.prediction["registered"])
        if "model_identity" not in document:  # made before documents recorded it
            identity = recorded_identity(job.input.constants, document["model"])
            document = {**document, "model_identity": identity}
    else:
        document = predicted_here(job, design, variants, manifests)
    measured = measured_identities(manifests, [read_json(p) for p in job.input.layouts])
    document = bound_to_run(document, design, variants, measured)
    write_json(job.output.document, document)
    Path(job.output.markdown).write_text(prediction_markdown(document), encoding="utf-8")


def predicted_here(job, design: Design, variants: dict, manifests: list[dict]) -> dict:
    """The prediction made from this run's emulated device (analysis/prediction.py; manifests:
    its models', which it scales by)."""
    # per job: each job imports its own stage's modules (0.2-0.4 s each if all)
    from mnnrepro.analysis.attribution import profile_files
    from mnnrepro.analysis.prediction import prediction_document
    from mnnrepro.models.shapes import text_shape

    given = job.input
    context = {
        "constants": given.constants,
        "shapes": {m["model"]: text_shape(m["spec"]["shape"]) for m in manifests},
        "prompt_tokens": design.bench.prompt_tokens,
        "generate_tokens": design.bench.generate_tokens,
        "variants": variants,
        "waiting": job.params.waiting,
        "inputs": {
            "kernels.csv": sha256_file(given.kernels),
            "cost_model": sha256_file(given.constants),
        },
    }
    spec = job.params.prediction
    if spec.get("pricing") == "per_instruction":
        counted, context["priced_by"] = priced_counts(given, spec)
        # the counted profiles: one sha256 of each file's path and sha256, in order
        listed = "".join(f"{f} {sha256_file(f)}\n" for f in profile_files(given.profiles))
        context["inputs"]["profiles"] = sha256_text(listed)
        return prediction_document(counted, design, spec, context, priced=True)
    kernels = pd.read_csv(given.kernels, keep_default_na=False, na_values=[""])
    return prediction_document(kernels, design, spec, context)


def priced_counts(given, spec: dict) -> tuple[pd.DataFrame, str]:
    """The counting device's profiles with every executed encoding priced by the fetched
    llvm-mca's model of the prediction's core (analysis/instruction_prices.py), and the
    release that priced them."""
    # per job: each job imports its own stage's modules (0.2-0.4 s each if all)
    from mnnrepro.analysis.attribution import read_profiles
    from mnnrepro.analysis.cost_model import CostModel
    from mnnrepro.analysis.instruction_prices import priced_run
    from mnnrepro.toolchain.llvm_mca import LlvmTools

    keys = (spec["core"], spec["soc"], spec["model"])
    cost = CostModel.read(given.constants, *keys, "per_instruction")
    tools = LlvmTools.of(read_json(given.llvm_mca))
    return priced_run(read_profiles(given.profiles), tools, cost.llvm_mca), tools.version()
