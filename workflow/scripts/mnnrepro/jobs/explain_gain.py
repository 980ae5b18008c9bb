"""The job of rule explain_gain (workflow/rules/analysis.smk)."""

from mnnrepro.analysis.mechanism import bandwidth_of, mechanism_document, mechanism_table
from mnnrepro.design import Design
from mnnrepro.files import write_json
from mnnrepro.job import Job
from mnnrepro.logs import log_to
from mnnrepro.records import read_chained_table, read_record


def run(job: Job) -> None:
    log_to(job.log[0])
    design = Design.of(job.params.design)
    bench = read_chained_table(job.input.bench, job.input.document)
    summary = read_chained_table(job.input.summary, job.input.document)
    bandwidth = bandwidth_of([read_record(p, "bandwidth") for p in job.input.bandwidth])
    layouts = {  # (model, format) -> layout
        (layout.pop("model"), layout.get("format", "mnn")): layout
        for layout in (read_record(p, "model_layout") for p in job.input.layouts)
    }
    table = mechanism_table(bench, layouts, bandwidth, design, job.params.engine_formats)
    table.to_csv(job.output.table, index=False)
    write_json(
        job.output.document,
        mechanism_document(table, summary, bench, bandwidth, layouts, design),
    )
