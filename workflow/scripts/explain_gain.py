from mnnrepro.analysis.mechanism import bandwidth_of, mechanism_document, mechanism_table
from mnnrepro.design import Design
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.records import read_chained_table, read_record

log_to(snakemake.log[0])
design = Design.of(snakemake.params.design)
bench = read_chained_table(snakemake.input.bench, snakemake.input.document)
summary = read_chained_table(snakemake.input.summary, snakemake.input.document)
bandwidth = bandwidth_of([read_record(p, "bandwidth") for p in snakemake.input.bandwidth])
layouts = {  # (model, format) -> layout
    (layout.pop("model"), layout.get("format", "mnn")): layout
    for layout in (read_record(p, "model_layout") for p in snakemake.input.layouts)
}
table = mechanism_table(bench, layouts, bandwidth, design, snakemake.params.engine_formats)
table.to_csv(snakemake.output.table, index=False)
write_json(
    snakemake.output.document,
    mechanism_document(table, summary, bench, bandwidth, layouts, design),
)
