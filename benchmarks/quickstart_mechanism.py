"""How often the quickstart's mechanism check says what: cold quickstart runs, each in a fresh
directory (the model exported again, nothing cached), some of them under load.

Usage: python benchmarks/quickstart_mechanism.py [--runs 4] [--loaded 1] [--configfile F]
       [--quant-bit B --name NAME]

Each run is `snakemake --cores 4` (with --configfile F, that config instead of the default;
with --quant-bit B, the default config with its model's weights quantised to B bits, written
beside the run: a model whose decode reads more bytes per operation);
a loaded run has one busy process beside it for the whole run (a spinning Python loop,
stopped when the run ends). Per run: the wall time, where the benchmark stopped, the gains
and the mechanism check's word with its evidence, read from the run's own summary.csv and
mechanism.json. The tally says how often each word came out.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import yaml  # noqa: E402
from provenance import write_results  # noqa: E402

CHECK = "prefill gain > decode gain"
SPIN = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end: pass\n"


def cold_run(workdir: Path, configfile: str | None, loaded: bool) -> dict:
    """One cold quickstart in workdir, with a busy process beside it when loaded."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "4", "--directory", str(workdir)]
    cmd += ["--configfile", configfile] if configfile else []
    hog = subprocess.Popen([sys.executable, "-c", SPIN]) if loaded else None
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake failed in {workdir}: {proc.stderr[-2000:]}")
    experiment = next((workdir / "results").glob("*/mechanism.json")).parent
    return {"seconds": round(seconds, 1), "loaded": loaded, **read_run(experiment)}


def read_run(experiment: Path) -> dict:
    """The mechanism check's word and evidence, the gains and the stop, from a run's files."""
    checks = json.loads((experiment / "mechanism.json").read_text())["checks"]
    (check,) = [c for c in checks if c["check"] == CHECK]
    with open(experiment / "summary.csv", newline="") as f:
        rows = {r["phase"]: r for r in csv.DictReader(f)}
    return {
        "status": check["status"],
        "evidence": check["evidence"],
        "prefill_gain": float(rows["prefill"]["gain"]),
        "decode_gain": float(rows["decode"]["gain"]),
        "blocks": int(rows["prefill"]["n_pairs"]),
        "stopped": rows["prefill"]["blocks_stop_reason"].split(";")[0],
    }


def requantised(quant_bit: int, folder: Path) -> str:
    """The default config with every synthetic model's weights at quant_bit bits (its
    experiment named for it), written into folder; its path."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for model in config["models"].values():
        model["synthetic"]["quant_bit"] = quant_bit
    config["experiment"] = f"{config['experiment']}-{quant_bit}bit"
    path = folder / f"config-{quant_bit}bit.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return str(path)


def report(runs: list[dict], configfile: str | None) -> list[str]:
    tally = Counter(r["status"] for r in runs)
    lines = [
        "# How often the quickstart shows its mechanism",
        "",
        f"`snakemake --cores 4`{f' --configfile {configfile}' if configfile else ''}, cold "
        "(a fresh directory each run: the model exported again), on this machine; a loaded run "
        "has one spinning process beside it. The mechanism check (`prefill gain > decode gain`) "
        "words the interval of prefill's speedup over decode's: `shown` above 1, "
        "`contradicted` below, `inconclusive` when it holds 1.",
        "",
        "| run | load | seconds | blocks | prefill gain | decode gain | check | evidence |",
        "|---:|---|---:|---:|---:|---:|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        gap = r["evidence"].split("; ", 1)[-1]
        lines.append(
            f"| {i} | {'busy' if r['loaded'] else 'quiet'} | {r['seconds']:.0f} | {r['blocks']} "
            f"| {r['prefill_gain']:+.1%} | {r['decode_gain']:+.1%} | {r['status']} | {gap} |"
        )
    lines += [
        "",
        "Tally: " + ", ".join(f"{word} {n} of {len(runs)}" for word, n in tally.most_common()),
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="quiet cold runs")
    parser.add_argument("--loaded", type=int, default=1, help="cold runs under load")
    parser.add_argument("--configfile", help="another config than the default")
    parser.add_argument("--quant-bit", type=int, help="the default config at these bits")
    parser.add_argument("--name", default="quickstart_mechanism", help="results file name")
    args = parser.parse_args(argv)
    if args.quant_bit and (args.configfile or args.name == parser.get_default("name")):
        parser.error("--quant-bit takes the default config and a results --name of its own")
    runs, said = [], args.configfile
    with tempfile.TemporaryDirectory(prefix="quickstart-config-") as folder:
        configfile = requantised(args.quant_bit, Path(folder)) if args.quant_bit else said
        said = f"{Path(configfile).name} (--quant-bit {args.quant_bit})" if args.quant_bit else said
        for loaded in [False] * args.runs + [True] * args.loaded:
            with tempfile.TemporaryDirectory(prefix="quickstart-mechanism-") as workdir:
                runs.append(cold_run(Path(workdir), configfile, loaded))
            print(json.dumps(runs[-1]), flush=True)
    result = {"configfile": said, "quant_bit": args.quant_bit, "runs": runs}
    write_results(args.name, result, report(runs, said))
    return 0


if __name__ == "__main__":
    sys.exit(main())
