"""Re-derive tables, statistics, verdicts, plots and the summary from a results archive.

Needs no phone, no toolchain, no engine and no network: only the archived raw invocation
records, checks and facts, and the archived resolved config.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import yaml

from mnnrepro.archive import safe_extract, verify_manifest
from mnnrepro.hashing import read_json, write_json

CONFIG_NAME = "config.resolved.yaml"


def replay(archive: str, out_dir: str) -> dict:
    from mnnrepro.plots import runs_chart, save, speedup_chart, temperature_chart
    from mnnrepro.report import markdown
    from mnnrepro.summary import device_modes, summarize, summary_document
    from mnnrepro.tables import bench_table

    out = Path(out_dir)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        safe_extract(archive, tmp)
        verify_manifest(tmp)
        root = Path(tmp)
        config = yaml.safe_load((root / CONFIG_NAME).read_text(encoding="utf-8"))
        exp = root / "results" / config["experiment"]
        runs = sorted((exp / "runs").rglob("*.json"))
        bench = bench_table([read_json(p) for p in runs], base_dir=root)
        validity = {
            (v["device"], v["model"]): v
            for v in map(read_json, sorted((exp / "validity").rglob("*.json")))
        }
        facts = {d["device"]: d for d in map(read_json, sorted((exp / "devices").glob("*.json")))}
        engines = {
            e["engine"]: e
            for e in map(read_json, sorted((root / "results/engines").rglob("*.json")))
        }
        summary = summarize(bench, validity, config, device_modes(facts, engines, config))
        document = summary_document(summary, validity, config)
        models = {
            m["model"]: m
            for m in map(read_json, sorted((root / "results/models").rglob("manifest.json")))
        }
        bench.to_csv(out / "bench.csv", index=False)
        summary.to_csv(out / "summary.csv", index=False)
        write_json(out / "summary.json", document)
        emulation = [pd.read_csv(p) for p in sorted((exp / "emulation").glob("*.csv"))]
        (out / "summary.md").write_text(
            markdown(summary, document, facts, engines, models, emulation), encoding="utf-8"
        )
        save(runs_chart(bench), out / "plots/runs.html", out / "plots/runs.png")
        save(speedup_chart(summary), out / "plots/speedup.html", out / "plots/speedup.png")
        save(
            temperature_chart(bench), out / "plots/temperature.html", out / "plots/temperature.png"
        )
        provenance = read_json(root / "provenance.json")
    return {"experiment": config["experiment"], "provenance": provenance}
