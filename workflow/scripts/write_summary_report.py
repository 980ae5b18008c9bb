from pathlib import Path

import pandas as pd

from mnnrepro.analysis.report import markdown
from mnnrepro.archive.replay_check import replay_section
from mnnrepro.files import read_json
from mnnrepro.logs import log_to
from mnnrepro.records import read_chained_table, read_record, read_table

log_to(snakemake.log[0])
facts = {d["device"]: d for d in (read_record(p, "device_facts") for p in snakemake.input.facts)}
engines = {e["engine"]: e for e in (read_record(p, "engine") for p in snakemake.input.engines)}
models = {
    m["model"]: m for m in (read_record(p, "model_manifest") for p in snakemake.input.manifests)
}
emulation = [
    read_table(p, [], "delete it to check the emulated devices again")
    for p in snakemake.input.emulation
]
text = markdown(
    read_chained_table(snakemake.input.table, snakemake.input.document),
    read_record(snakemake.input.document, "summary"),
    facts,
    engines,
    models,
    emulation,
    read_json(snakemake.input.mechanism[0]) if snakemake.input.mechanism else None,
    (
        read_chained_table(snakemake.input.sweep[0], snakemake.input.sweep[1])
        if snakemake.input.sweep
        else None
    ),
    pd.read_csv(snakemake.input.kernels[0], keep_default_na=False)
    if snakemake.input.kernels
    else None,
    snakemake.params.top,
    (
        pd.read_csv(snakemake.input.engine_tests[0], keep_default_na=False)
        if snakemake.input.engine_tests
        else None
    ),
    replay_section(read_json(snakemake.input.replay[0])) if snakemake.input.replay else [],
)
Path(snakemake.output.markdown).write_text(text, encoding="utf-8")
