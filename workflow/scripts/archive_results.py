import json
from pathlib import Path

import yaml

from mnnrepro.analysis.attribution import profile_files
from mnnrepro.archive.pack import write_archive
from mnnrepro.archive.provenance import git_state, tool_versions
from mnnrepro.files import read_json
from mnnrepro.logs import log_to

log_to(snakemake.log[0])
# the final outputs and the records a replay restores (the plan's archived_records)
files = {path: path for path in snakemake.input}
for index in map(read_json, [*snakemake.input.runs, *snakemake.input.sweep]):
    for entry in index["runs"]:
        # the raw file and every earlier measurement it superseded: a re-measurement stays on
        # the record
        for raw in [entry["raw"], *(s["raw"] for s in entry.get("superseded", []))]:
            files[raw] = raw
for path in profile_files(snakemake.input.profiles):
    files[path] = path
provenance = {
    "workflow": git_state(str(Path(snakemake.scriptdir).parents[1])),
    "tools": tool_versions(),
}
files["provenance.json"] = json.dumps(provenance, indent=2, sort_keys=True).encode()
files["config.resolved.yaml"] = yaml.safe_dump(
    snakemake.params.config, sort_keys=True, allow_unicode=True
).encode()
write_archive(snakemake.output.archive, files)
