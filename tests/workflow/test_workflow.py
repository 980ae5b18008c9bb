"""The whole workflow, run for real with Snakemake on the tiny experiment in a temp dir."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import assert_report, run_snakemake, without_replay_section

from mnnrepro.models.shapes import text_shape

# tiny_run is module-scoped: every test of the module on one worker (but the sweep, below)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("tiny-run")]

TINY = "tests/workflow/config-tiny.yaml"


def snakemake(
    root: Path, workdir: Path, *args: str, check: bool = True
) -> subprocess.CompletedProcess:
    return run_snakemake(
        root,
        "--cores",
        "2",
        "--configfile",
        str(root / TINY),
        "--directory",
        str(workdir),
        *args,
        check=check,
    )


@pytest.fixture(scope="module")
def tiny_run(root, seed_models, tmp_path_factory):
    """The tiny experiment, every stage from its model on (the model rules' own run of this
    config is the seed's: conftest.seed_models)."""
    workdir = tmp_path_factory.mktemp("tiny-run")
    seed_models(workdir, yaml.safe_load((root / TINY).read_text())["models"])
    snakemake(root, workdir)
    return workdir


def test_every_output_is_written(tiny_run):
    out = tiny_run / "results" / "tiny"
    for rel in [
        "bench.csv",
        "summary.csv",
        "summary.json",
        "summary.md",
        "plots/runs.html",
        "plots/runs.png",
        "plots/speedup.html",
        "plots/speedup.png",
        "plots/temperature.html",
        "plots/temperature.png",
        "plots/kernels.html",  # what ran: the top functions per variant and phase
        "plots/kernels.png",
    ]:
        data = (out / rel).read_bytes()
        if rel.endswith(".png"):  # a real image, not an empty or error file
            assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000, rel
        elif rel.endswith(".html"):  # a Vega-Lite chart with data in it
            assert b"vega-lite" in data and b'"datasets"' in data, rel
            if "runs" in rel:  # every repetition of both variants
                assert b"one-thread" in data and b"two-threads" in data, rel
        else:
            assert len(data) > 0, rel
    assert (out / "plots" / "runs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # what ran: the host's perf profiles of every variant and phase, the engine's library named
    kernels = pd.read_csv(out / "kernels.csv", keep_default_na=False)
    assert set(zip(kernels["variant"], kernels["phase"], strict=True)) == {
        (v, p) for v in ("one-thread", "two-threads") for p in ("prefill", "decode", "vision")
    }  # the vision model's image questions have their own profile
    engine = kernels[kernels["engine_library"]]
    assert not engine.empty and set(engine["library"]) == {
        n for n in engine["library"] if n.startswith("_mnncengine")
    }
    assert (engine["symbol"] != "").sum() >= 0.9 * len(engine)
    # self-contained: vega is inlined, nothing is loaded from a CDN
    html = (out / "plots" / "speedup.html").read_text()
    assert "cdn.jsdelivr" not in html and "vegaEmbed" in html


def test_bench_table_has_one_row_per_variant_phase_and_repetition(tiny_run):
    bench = pd.read_csv(tiny_run / "results" / "tiny" / "bench.csv")
    assert len(bench) == 2 * 5 * 3  # prefill, decode and the vision model's three phases
    counts = bench.groupby(["variant", "phase"]).size()
    assert (counts == 3).all()
    assert sorted(bench["block"].unique()) == [0, 1, 2]
    decode = bench[bench["phase"] == "decode"]
    assert (decode["tokens"] == 8).all()
    assert (decode["context_start"] == 32).all()  # right after the 32-token prompt
    assert (bench["settings_mismatch"].isna()).all() and bench["timing_plausible"].all()
    assert (bench["ran_warmup"] == 1).all()
    assert bench["run_order"].nunique() == 6
    assert bench["other_load"].notna().all()  # measured for every invocation on this host


def test_the_vision_phase_times_the_image_question_of_every_invocation(tiny_run):
    """bench.vision (the schema's default image) on the tiny Qwen3-VL: every invocation of
    both variants encoded the same pixels into the same image tokens, and the time to the
    first token holds the encoder's and the image prompt's prefill. Each part is compared
    with the whole, not their sum: the encoder's time is MNN's own timer inside it, and on a
    loaded machine the sum came out ~1 ms above the whole our clock took around both."""
    bench = pd.read_csv(tiny_run / "results" / "tiny" / "bench.csv")
    vision = bench[bench["phase"] == "vision"]
    assert len(vision) == 2 * 3 and vision["pixels_mp"].gt(0).all()
    assert vision["pixels_mp"].nunique() == 1 and vision["tokens"].nunique() == 1
    assert bench[bench["phase"] != "vision"]["pixels_mp"].isna().all()
    per_run = bench.pivot_table(index="raw_file", columns="phase", values="seconds")
    assert (per_run["first_token"] > per_run["image_prefill"]).all()
    assert (per_run["first_token"] > per_run["vision"]).all()
    prompts = bench[bench["phase"] == "image_prefill"]["tokens"]
    assert (prompts > vision["tokens"].iloc[0]).all()  # the image's tokens and the text's
    assert (bench[bench["phase"] == "first_token"]["tokens"] == 1).all()  # one question
    summary = pd.read_csv(tiny_run / "results" / "tiny" / "summary.csv")
    rows = summary[summary["phase"].isin(["vision", "image_prefill", "first_token"])]
    assert len(rows) == 3 and set(rows["verdict"]) == {"no claim"}
    assert (rows["gain_ci_low"] <= rows["gain"]).all() and (rows["n_pairs"] == 3).all()
    text = (tiny_run / "results" / "tiny" / "summary.md").read_text()
    assert "## The vision phase (image questions)" in text


def test_summary_has_every_phase_and_a_verdict(tiny_run):
    summary = pd.read_csv(tiny_run / "results" / "tiny" / "summary.csv")
    assert list(summary["phase"]) == ["prefill", "decode", "vision", "image_prefill", "first_token"]
    assert (summary["ci_low"] <= summary["ratio"]).all()
    assert (summary["ratio"] <= summary["ci_high"]).all()
    assert set(summary["verdict"]) == {"no claim"}  # the tiny config makes no claim
    text = (tiny_run / "results" / "tiny" / "summary.md").read_text()
    assert "correctness gate" in text and "Rule:" in text
    assert "max other load" in text


def test_gate_ran_the_image_prompt_through_the_vision_encoder(root, tiny_run):
    """The tiny model is a Qwen3-VL: the schema's default image prompt joins the gate."""
    greedy = json.loads((tiny_run / "results/tiny/greedy/host/synth-tiny-vl.json").read_text())
    card = hashlib.sha256((root / "config/images/test-card.png").read_bytes()).hexdigest()
    assert set(greedy) == {"one-thread", "two-threads"}  # each variant answered
    for payload in greedy.values():
        image = [a for a in payload["answers"] if a.get("image_sha256")]
        assert [a["prompt"] for a in image] == ["[image test-card.png] Describe this image."]
        assert image[0]["image_sha256"] == card
        assert image[0]["sent"].startswith("<img>") and len(image[0]["tokens"]) == 8
    text = (tiny_run / "results" / "tiny" / "summary.md").read_text()
    assert "[image test-card.png] Describe this image." in text
    assert "1 image prompt(s) through the vision encoder" in text


def test_the_gate_is_teacher_forced_over_every_step(tiny_run):
    """The treatment was fed the baseline's tokens for every prompt, the image prompt too,
    and every step was compared there (the free-running answers stay recorded)."""
    greedy = json.loads((tiny_run / "results/tiny/greedy/host/synth-tiny-vl.json").read_text())
    forced = greedy["two-threads"]["teacher_forced"]["one-thread"]
    reference = {a["prompt"]: a["tokens"] for a in greedy["one-thread"]["answers"]}
    assert {a["prompt"]: a["forced_tokens"] for a in forced} == reference
    assert "teacher_forced" not in greedy["one-thread"]  # the reference is fed nothing
    validity = json.loads((tiny_run / "results/tiny/validity/host/synth-tiny-vl.json").read_text())
    (gate,) = [c for c in validity["checks"] if c["name"].startswith("correctness gate")]
    assert "teacher-forced" in gate["name"]
    rows = gate["details"]["prompts"]
    assert len(rows) == 3 and all(r["teacher_forced"] for r in rows)
    assert [r["steps_compared"] for r in rows] == [len(reference[r["prompt"]]) for r in rows]
    assert all(r["max_logit_diff_sd"] is not None for r in rows)
    assert {"free_kind", "first_top1_difference", "reference_margin"} <= set(rows[0])


def test_rerun_does_nothing(root, tiny_run):
    proc = snakemake(root, tiny_run)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_deleting_summary_reruns_only_downstream(root, tiny_run):
    (tiny_run / "results" / "tiny" / "summary.csv").unlink()
    proc = snakemake(root, tiny_run, "-n", "--quiet", "rules")
    planned = {
        line.split()[0] for line in proc.stdout.splitlines() if line and line.split()[0] in RULES
    }
    assert planned == {"compute_summary", "plot", "write_summary_report", "all"}
    snakemake(root, tiny_run)


def test_html_report(root, tiny_run):
    snakemake(root, tiny_run, "--report", str(tiny_run / "report.html"))
    assert_report(tiny_run / "report.html", "summary.csv", "bench.csv", "kernels.csv")


RULES = {
    "make_synthetic_model",
    "export_mnn_model",
    "describe_engine",
    "collect_device_facts",
    "decide_pair_modes",
    "run_greedy",
    "run_bench",
    "check_validity",
    "collect_bench_table",
    "compute_summary",
    "plot",
    "write_summary_report",
    "all",
}


def test_archive_is_deterministic_and_replays_to_identical_tables(root, tiny_run, tmp_path):
    archive = tiny_run / "results" / "tiny" / "tiny-archive.tar.gz"
    snakemake(root, tiny_run, "archive")
    first = archive.read_bytes()
    archive.unlink()
    snakemake(root, tiny_run, "archive")
    assert archive.read_bytes() == first

    # replay in an empty directory: no model, no engine run, no device
    replay_dir = tmp_path / "replay"
    replay_dir.mkdir()
    proc = run_snakemake(
        root, "--cores", "1", "--directory", str(replay_dir), "--config", f"replay={archive}"
    )
    replayed = replay_dir / "results" / "replay" / "tiny-archive"
    for name in ("summary.csv", "bench.csv", "kernels.csv"):
        original = (tiny_run / "results" / "tiny" / name).read_text()
        assert (replayed / name).read_text() == original, name
    # the replay checked itself against the archive's tables, and says so first
    check = json.loads((replayed / "replay.json").read_text())
    assert check["identical"] and set(check["tables"]) >= {"summary.csv", "bench.csv"}
    assert check["archive_sha256"] == hashlib.sha256(first).hexdigest()
    assert without_replay_section(replayed) == (tiny_run / "results/tiny/summary.md").read_text()
    assert "run_bench" not in proc.stdout + proc.stderr
    assert "profile_kernels" not in proc.stdout + proc.stderr


def test_a_benchmark_the_summary_and_an_archive_rerun_from_their_specs_alone(root, copied_run):
    """Each job wrote its spec beside its log (mnnrepro/job.py); `python -m mnnrepro.job
    <spec>`, without Snakemake, remakes its outputs byte for byte: the benchmark resumes from
    its raw records, the summary derives from them again, the archive packs the same files."""
    snakemake(root, copied_run, "archive")
    for rule in ("run_bench", "compute_summary", "archive_results"):
        (spec,) = (copied_run / "logs" / rule).rglob("*.job.json")
        job = json.loads(spec.read_text())
        assert job["rule"] == rule
        outputs = [copied_run / path for path in job["output"]["items"]]
        made = {path: path.read_bytes() for path in outputs}
        for path in outputs:
            path.unlink()
        subprocess.run(  # this checkout's package, whatever another install provides
            [sys.executable, "-m", "mnnrepro.job", str(spec)],
            cwd="/",
            env={**os.environ, "PYTHONPATH": str(root / "workflow" / "scripts")},
            check=True,
            timeout=300,
        )
        assert {path: path.read_bytes() for path in outputs} == made, rule


# ---- untrusted derived data: a real run's files, edited afterwards, are refused ------------


@pytest.fixture
def copied_run(tiny_run, tmp_path):
    """A copy of the tiny run (results, logs, Snakemake's records), to edit."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy, symlinks=True)
    return copy


def refused(proc, log: Path) -> str:
    """The one-line error a failed job printed (its log: no traceback)."""
    assert proc.returncode != 0
    text = log.read_text()
    assert "Traceback" not in text, text[-2000:]
    return next(line for line in text.splitlines() if line.startswith("error: "))


def test_a_hand_edited_bench_table_is_refused_naming_the_cell(root, copied_run):
    path = copied_run / "results/tiny/bench.csv"
    bench = pd.read_csv(path)
    bench.loc[0, "tps"] *= 4  # a tok/s "gain" typed in
    bench.to_csv(path, index=False)
    proc = snakemake(root, copied_run, check=False)
    line = refused(proc, copied_run / "logs/compute_summary/tiny.log")
    assert line.startswith("error: results/tiny/bench.csv: line 2, column `tps` is ")
    assert "but the raw records give" in line and line.endswith("delete it to derive it again")
    assert line in proc.stdout + proc.stderr  # shown by Snakemake too (show-failed-logs)


def test_a_remeasurement_stays_on_the_record_in_the_report_the_archive_and_its_replay(
    root, copied_run, tmp_path
):
    """`--config remeasure=<label>` measures again; the superseded raw files, their count and
    the label reach bench.csv, summary.csv and summary.md, go into the archive, and a replay
    of it shows the same (a run repeated until the verdict suits cannot hide it)."""
    snakemake(root, copied_run, "--config", "remeasure=second-look")
    out = copied_run / "results" / "tiny"
    bench = pd.read_csv(out / "bench.csv")
    assert set(bench["superseded"]) == {1} and set(bench["remeasure"]) == {"second-look"}
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["remeasured_invocations"]) == {6}  # 3 blocks x 2 variants
    assert summary["remeasurements"].str.contains("label second-look").all()
    assert "6 invocations re-measured" in (out / "summary.md").read_text()
    snakemake(root, copied_run, "archive")
    archive = out / "tiny-archive.tar.gz"
    import tarfile

    with tarfile.open(archive) as tar:
        kept = [n for n in tar.getnames() if ".superseded-" in n]
    assert len(kept) == 6
    replay_dir = tmp_path / "replay"
    replay_dir.mkdir()
    run_snakemake(
        root, "--cores", "1", "--directory", str(replay_dir), "--config", f"replay={archive}"
    )
    replayed = replay_dir / "results" / "replay" / "tiny-archive"
    for name in ("bench.csv", "summary.csv"):
        assert (replayed / name).read_text() == (out / name).read_text(), name
    assert without_replay_section(replayed) == (out / "summary.md").read_text()


def test_a_raw_record_edited_after_the_run_is_refused(root, copied_run):
    raw = sorted((copied_run / "results/tiny/raw").rglob("rep-001.json"))[0]
    raw.write_text(raw.read_text().replace('"status": "ok"', '"status":  "ok"'))
    proc = snakemake(root, copied_run, "--forcerun", "collect_bench_table", check=False)
    line = refused(proc, copied_run / "logs/collect_bench_table/tiny.log")
    rel = raw.relative_to(copied_run)
    assert line.startswith(f"error: {rel}: content changed since results/tiny/runs/host/")


def test_a_truncated_raw_record_says_where_and_what_to_do(root, copied_run):
    raw = sorted((copied_run / "results/tiny/raw").rglob("rep-002.json"))[0]
    data = raw.read_bytes()
    raw.write_bytes(data[:871])
    proc = snakemake(root, copied_run, "--forcerun", "collect_bench_table", check=False)
    line = refused(proc, copied_run / "logs/collect_bench_table/tiny.log")
    assert line == (
        f"error: {raw.relative_to(copied_run)}: not valid JSON (truncated at byte 871); "
        "delete it to re-measure that repetition"
    )


def test_an_edited_summary_table_is_refused_by_its_readers(root, copied_run):
    path = copied_run / "results/tiny/summary.csv"
    path.write_text(path.read_text().replace("no claim", "reproduced"))
    proc = snakemake(root, copied_run, "results/tiny/summary.md", check=False)
    # whichever of its readers runs first refuses it (the report, the mechanism analysis or the
    # plots: two may run side by side with --cores 2, and both refuse it)
    readers = ["write_summary_report/tiny", "explain_gain/tiny", "plot/tiny"]
    logs = [copied_run / f"logs/{reader}.log" for reader in readers]
    refusals = [refused(proc, p) for p in logs if p.exists() and "error: " in p.read_text()]
    assert refusals, f"no reader of summary.csv refused it: {proc.stderr[-2000:]}"
    for line in refusals:
        assert line.startswith(
            "error: results/tiny/summary.csv: content changed since results/tiny/summary.json"
        )


# ---- this host counted: the prediction's method where its answer is measured --------------

COUNTED = (
    "experiment=tiny-counted",
    "devices={host: {local: {profiler: callgrind}}}",
)


def tiny_cost_model(root: Path, folder: Path) -> str:
    """config/cost_model.yaml with the tiny model's shape among its models (its bytes per
    weight the quickstart model's: the same export), so that the tiny run is predicted for the
    model it measures; a prediction for another model is not scored (test_prediction_score)."""
    data = yaml.safe_load((root / "config" / "cost_model.yaml").read_text())
    shape = {
        k: v for k, v in text_shape("tiny").items() if k in data["models"]["qwen3-0.6b"]["shape"]
    }
    data["models"]["tiny"] = {**data["models"]["qwen3-0.6b"], "shape": shape}
    path = folder / "cost_model-tiny.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (.ci/run installs it)")
def test_this_host_counted_by_callgrind_is_predicted_and_scored(root, copied_run):
    """The tiny experiment again with the host's profiles counted by callgrind (every
    instruction by class) and a prediction priced for the reference machine's core: the
    prediction is made from this host's own counts and scored against the gains the same run
    measures natively (config/predict-host.yaml at the quickstart's scale)."""
    constants = tiny_cost_model(root, copied_run)
    prediction = "{device: host, core: epyc-zen4, soc: reference-host, model: tiny, "
    snakemake(
        root, copied_run, "--config", *COUNTED, f"prediction={prediction}constants: {constants}}}"
    )
    out = copied_run / "results" / "tiny-counted"
    kernels = pd.read_csv(out / "kernels.csv", keep_default_na=False, na_values=[""])
    assert set(kernels["profiler"]) == {"valgrind --tool=callgrind"}
    engine = kernels[kernels["engine_library"] & kernels["instructions"].notna()]
    per_profile = engine.groupby(["variant", "phase"])["instructions"].sum()
    for variant in ("one-thread", "two-threads"):
        assert {"prefill", "prefill_short", "startup", "decode"} <= set(per_profile[variant].index)
    # a longer prompt runs more instructions: the phases were profiled as asked (one thread:
    # with two, the count holds what a waiting thread spins, which the machine's load moves;
    # valgrind runs one thread at a time. A suite on 2 busy CPUs once counted two threads'
    # prefill_short above their prefill)
    counts = per_profile["one-thread"]
    assert counts["startup"] < counts["prefill_short"] < counts["prefill"]
    document = json.loads((out / "prediction.json").read_text())
    assert document["counted_by"] == "valgrind --tool=callgrind"
    # its intervals at their stated level, the model error's source named (cost_model.py)
    assert document["interval"]["level"] == 0.8 and document["interval"]["model_error_source"]
    assert "| 80% interval |" in (out / "prediction.md").read_text()
    (predicted,) = document["predictions"]
    for phase in ("prefill", "decode"):
        rates = predicted["phases"][phase]["tokens_per_s"]
        assert 0 < rates["baseline"] < float("inf") and 0 < rates["treatment"] < float("inf")
    summary = pd.read_csv(out / "summary.csv")
    scored = summary[summary["phase"].isin(["prefill", "decode"])]
    assert scored["predicted_gain"].notna().all() and len(scored) == 2
    assert scored["prediction_holds_measured"].notna().all()  # predicted for the tiny model
    assert scored["log_error"].notna().all() and scored["not_scored"].isna().all()
    text = (out / "summary.md").read_text()
    assert "## Predicted before the phone" in text and "| host |" in text
