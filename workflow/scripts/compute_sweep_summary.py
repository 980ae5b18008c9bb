from mnnrepro.analysis.sweep import main_checks, sweep_summary, sweep_table
from mnnrepro.archive.replay import raw_path_mapper
from mnnrepro.files import write_json
from mnnrepro.logs import log_to
from mnnrepro.records import (
    chain,
    check_same_table,
    read_chained_table,
    read_record,
    read_table,
)

log_to(snakemake.log[0])
config = {
    key: getattr(snakemake.params, key) for key in ("experiment", "comparison", "stats", "bench")
}
hint = "delete it to derive it again"
# sweep/bench.csv must be exactly what the sweep's raw records give
derived = sweep_table(
    snakemake.input.runs,
    raw_path_mapper(*snakemake.params.raw_roots),
    snakemake.params.max_other_load,
)
check_same_table(snakemake.input.table, derived, "the sweep's raw records", hint)
sweep = read_table(snakemake.input.table, [], hint)
main = read_chained_table(snakemake.input.main, snakemake.input.document)
checks = main_checks(read_record(snakemake.input.document, "summary"))
summary = sweep_summary(sweep, main, config, checks)
summary.to_csv(snakemake.output.table, index=False)
document = {
    "experiment": config["experiment"],
    "sweep": config["bench"].get("sweep", {}),
    "rows": summary.astype(object).where(summary.notna(), None).to_dict(orient="records"),
    "chain": chain({"bench.csv": snakemake.input.table, "summary.csv": snakemake.output.table}),
}
write_json(snakemake.output.document, document)
