from mnnrepro.analysis.summary import summarize, summary_document
from mnnrepro.analysis.tables import BENCH_COLUMNS, bench_table_from
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.engines.pairs import compared_pairs, device_modes
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.records import chain, check_same_table, read_record, read_table

log_to(snakemake.log[0])
config = {
    key: getattr(snakemake.params, key)
    for key in ("experiment", "comparison", "stats", "bench", "variants")
}
# bench.csv must be exactly what the raw records (hash-checked against their index) give
derived = bench_table_from(
    snakemake.input.runs,
    raw_path_mapper(*snakemake.params.raw_roots),
    snakemake.params.max_other_load,
)
hint = "delete it to derive it again"
check_same_table(snakemake.input.table, derived, "the raw records", hint)
table = read_table(snakemake.input.table, BENCH_COLUMNS, hint)
validity = {
    (v["device"], v["model"]): v
    for v in (read_record(p, "validity") for p in snakemake.input.validity)
}
facts = {f["device"]: f for f in (read_record(p, "device_facts") for p in snakemake.input.facts)}
engines = {e["engine"]: e for e in (read_record(p, "engine") for p in snakemake.input.engines)}
indexes = [read_record(p, "run_index") for p in snakemake.input.runs]
stopping = {(i["device"], i["model"]): i.get("stopping") for i in indexes}
summary = summarize(
    table,
    validity,
    config,
    device_modes(compared_pairs(config["comparison"], config["variants"]), engines, facts),
    stopping,
)
summary.to_csv(snakemake.output.table, index=False)
document = summary_document(summary, validity, config)
document["chain"] = chain(
    {
        "bench.csv": snakemake.input.table,
        "summary.csv": snakemake.output.table,
        **dict(zip(["kernels.csv"], snakemake.input.kernels, strict=False)),
    }
)
write_json(snakemake.output.document, document)
