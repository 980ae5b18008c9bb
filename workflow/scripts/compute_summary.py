import pandas as pd

from mnnrepro.analysis.summary import device_modes, summarize, summary_document
from mnnrepro.files import read_json, write_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
config = {
    key: getattr(snakemake.params, key)
    for key in ("experiment", "comparison", "stats", "bench", "variants")
}
validity = {(v["device"], v["model"]): v for v in map(read_json, snakemake.input.validity)}
facts = {f["device"]: f for f in map(read_json, snakemake.input.facts)}
engines = {e["engine"]: e for e in map(read_json, snakemake.input.engines)}
summary = summarize(
    pd.read_csv(snakemake.input.table), validity, config, device_modes(facts, engines, config)
)
summary.to_csv(snakemake.output.table, index=False)
write_json(snakemake.output.document, summary_document(summary, validity, config))
