import pandas as pd

from mnnrepro.hashing import read_json, write_json
from mnnrepro.logs import log_to
from mnnrepro.summary import summarize, summary_document

log_to(snakemake.log[0])
config = snakemake.params.config
validity = {(v["device"], v["model"]): v for v in map(read_json, snakemake.input.validity)}
summary = summarize(pd.read_csv(snakemake.input.table), validity, config)
summary.to_csv(snakemake.output.table, index=False)
write_json(snakemake.output.document, summary_document(summary, validity, config))
