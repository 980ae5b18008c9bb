from pathlib import Path

import pandas as pd

from mnnrepro.analysis.report import markdown
from mnnrepro.files import read_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
facts = {d["device"]: d for d in map(read_json, snakemake.input.facts)}
engines = {e["engine"]: e for e in map(read_json, snakemake.input.engines)}
models = {m["model"]: m for m in map(read_json, snakemake.input.manifests)}
emulation = [pd.read_csv(path) for path in snakemake.input.emulation]
text = markdown(
    pd.read_csv(snakemake.input.table),
    read_json(snakemake.input.document),
    facts,
    engines,
    models,
    emulation,
)
Path(snakemake.output.markdown).write_text(text, encoding="utf-8")
