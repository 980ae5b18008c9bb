"""The results store on the shipped archives (benchmarks/results/host-sme2-archive.tar.gz, a
real run of the paper's two MNN builds on this host; engine-tests-archive.tar.gz, MNN 3.6.1's
OFF, ON and patched ON builds on six emulated CPUs): registered once, never twice, a
tampered copy refused with the store unchanged, the comparison's statistics against SciPy's
own Welch interval on the archive's real per-block ratios, and its selection of runs and
rows by engine commit, device and variant."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import sqlite3
import subprocess
import tarfile
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from mnnrepro.errors import DataError
from mnnrepro.store.__main__ import main
from mnnrepro.store.compare import (
    Selection,
    block_log_ratios,
    compare_runs,
    reference_row,
    welch_ratio,
)
from mnnrepro.store.register import register_archive
from mnnrepro.store.schema import open_store

TABLES = ("runs", "invocations", "summary_rows", "checks", "devices", "engines")


@pytest.fixture
def shipped(root):
    return str(root / "benchmarks" / "results" / "host-sme2-archive.tar.gz")


@pytest.fixture
def emulated(root):
    return str(root / "benchmarks" / "results" / "engine-tests-archive.tar.gz")


def counts(store) -> dict:
    db = sqlite3.connect(store)
    try:
        return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        db.close()


def test_an_archive_is_registered_once_with_its_records(shipped, tmp_path):
    store = tmp_path / "runs.sqlite"
    run_id, added = register_archive(store, shipped)
    assert added and len(run_id) == 64
    first = counts(store)
    # the archive's bench.csv (2 variants x 2 phases x 10 blocks), its summary rows, checks,
    # device and both engines' build records
    assert first == {
        "runs": 1,
        "invocations": 40,
        "summary_rows": 2,
        "checks": 3,
        "devices": 1,
        "engines": 2,
    }
    assert register_archive(store, shipped) == (run_id, False)
    assert counts(store) == first


def tampered_copy(shipped: str, out) -> None:
    """The archive with one tok/s of bench.csv changed and its manifest as it was."""
    with tarfile.open(shipped) as src, tarfile.open(out, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isfile() else None
            if member.name.endswith("/bench.csv"):
                lines = data.decode().splitlines(keepends=True)
                cells = lines[1].split(",")
                cells[10] = str(float(cells[10]) * 2)  # the tps column
                lines[1] = ",".join(cells)
                data = "".join(lines).encode()
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)


def test_a_tampered_archive_is_refused_in_one_line_and_the_store_is_unchanged(shipped, tmp_path):
    store = tmp_path / "runs.sqlite"
    register_archive(store, shipped)
    before = counts(store)
    bad = tmp_path / "edited.tar.gz"
    tampered_copy(shipped, bad)
    with pytest.raises(DataError, match=r"bench\.csv does not match the archive's MANIFEST"):
        register_archive(store, str(bad))
    assert counts(store) == before
    assert main(["register", str(store), str(bad)]) == 1  # the command says it in one line


def test_a_store_of_another_schema_is_refused(tmp_path):
    store = tmp_path / "old.sqlite"
    open_store(store).close()
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    db.close()
    with pytest.raises(DataError, match="a results store of schema 0, not 3"):
        open_store(store)


def test_the_change_between_runs_is_welchs_interval_on_their_block_ratios(shipped, tmp_path):
    """The archive's real per-block log ratios, split into two halves as two runs: the change
    compare reports is SciPy's Welch interval on them, as a ratio."""
    store = tmp_path / "runs.sqlite"
    run_id, _ = register_archive(store, shipped)
    db = open_store(store)
    key = ("host", "synth-qwen3-06b", "prefill", "sme2-off", "sme2-on")
    logs = block_log_ratios(db, run_id, key)
    db.close()
    assert len(logs) == 10 and np.isfinite(logs).all()
    a, b = logs[:5], logs[5:]
    ratio, low, high = welch_ratio(a, b, 0.95)
    ci = sps.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert ratio == pytest.approx(math.exp(b.mean() - a.mean()))
    assert (low, high) == pytest.approx((math.exp(ci.low), math.exp(ci.high)))
    table, checks = compare_runs(str(store), Selection(runs=(run_id[:8],)))
    assert list(table["phase"]) == ["prefill", "decode"] and table["change_vs_first"].isna().all()
    assert list(checks["checks_passed"]) == list(checks["checks"]) == [3]


def test_runs_and_rows_are_selected_by_engine_commit_device_and_variant(
    shipped, emulated, tmp_path
):
    """Two real runs: the host run judges two gains; the emulated one none (emulated timings
    never enter a gain) but its checks per CPU and pair: ON fails at 128 bits, not at 512."""
    store = str(tmp_path / "runs.sqlite")
    host, _ = register_archive(store, shipped)
    emu, _ = register_archive(store, emulated)
    gains, checks = compare_runs(store, Selection())  # every judged run
    assert set(gains["run_id"]) == {host} and set(checks["run_id"]) == {host, emu}
    assert set(gains["treatment_engine_version"]) == {"1aaf550704a81e19d48490fbf25b0a0cb51af2e9"}
    commit = "32b0c51226a336ec12c6aea006ac37fa659e4f72"  # the emulated run's MNN checkout
    gains, checks = compare_runs(store, Selection(engine_commits=(commit[:8],)))
    assert gains.empty and set(checks["run_id"]) == {emu}
    assert len(checks) == 12  # 6 CPUs x 2 pairs
    at_128 = Selection(engine_commits=(commit[:8],), devices=("qemu-sme2-vl128",))
    _, checks = compare_runs(store, replace(at_128, variants=("sme2-on",)))
    (row,) = checks.itertuples()
    assert row.treatment == "sme2-on" and row.checks_passed < row.checks
    assert "streaming vector length supported by sme2-on's SME2 kernels" in row.failed_checks
    _, checks = compare_runs(store, replace(at_128, devices=("qemu-sme2-vl512",)))
    assert (checks["checks_passed"] == checks["checks"]).all() and len(checks) == 2
    with pytest.raises(ValueError, match="--engine-commit 0000: no registered engine has it"):
        compare_runs(store, Selection(engine_commits=("0000",)))
    with pytest.raises(ValueError, match="--across phase: one of device, model"):
        Selection(across=("phase",))


def test_a_row_is_compared_across_devices_with_the_first_runs_row_of_its_pair(shipped, tmp_path):
    """`across`: a row of another device (here the host run's own rows, as a second phone
    would hold them) matches the first run's row of the same model, phase and pair; two
    candidates are refused, naming the option that picks one."""
    store = str(tmp_path / "runs.sqlite")
    host, _ = register_archive(store, shipped)
    gains, _ = compare_runs(store, Selection())
    phone = gains.assign(run_id="b" * 64, device="phone")
    table = pd.concat([gains, phone], ignore_index=True)
    decode = phone.iloc[1]
    ref = reference_row(table, host, decode, ("device",))
    assert (ref["device"], ref["phase"]) == ("host", "decode")
    assert reference_row(table, host, decode, ()) is None  # no host row on the phone
    two = pd.concat([table, gains.assign(device="tablet")], ignore_index=True)
    with pytest.raises(ValueError, match=r"holds 2 rows .* keep one with --device or --model"):
        reference_row(two, host, decode, ("device",))


def test_foreign_results_are_imported_as_reported_and_never_judged(root, shipped, tmp_path):
    """Real llama-bench JSON (tests/data/llama_bench) and MNN llm_bench -j JSON
    (tests/data/llm_bench): their means, SDs and (llama-bench) samples, marked unjudged;
    a compare refuses them."""
    store = str(tmp_path / "runs.sqlite")
    llama = root / "tests/data/llama_bench/host-x86-p64-n16-d0-64.json"
    mnn = root / "tests/data/llm_bench/llm_bench_kv361.json"
    assert main(["register", store, str(llama), str(mnn), str(llama)]) == 0
    db = sqlite3.connect(store)
    origins = dict(db.execute("SELECT origin, judged FROM runs").fetchall())
    assert origins == {"foreign:llama-bench": 0, "foreign:llm_bench": 0}  # the third: a repeat
    rows = db.execute(
        "SELECT phase, tps_mean, samples FROM foreign_results WHERE engine = 'llama.cpp'"
    ).fetchall()
    tests = json.loads(llama.read_text())
    assert [(r[0], r[1]) for r in rows] == [
        ("prefill" if t["n_gen"] == 0 else "decode", t["avg_ts"]) for t in tests
    ]
    assert [json.loads(r[2]) for r in rows] == [t["samples_ts"] for t in tests]
    (mnn_run,) = [r for (r,) in db.execute("SELECT run_id FROM runs WHERE origin LIKE '%llm%'")]
    db.close()
    with pytest.raises(ValueError, match="foreign:llm_bench: imported as reported, never judged"):
        compare_runs(store, Selection(runs=(mnn_run,)))
    with pytest.raises(ValueError, match="no judged run in the store"):
        compare_runs(store, Selection())  # every judged run: none


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not CHROMIUM, reason="no Chromium (.ci/run installs Debian's chromium)")
def test_the_dashboard_renders_in_headless_chromium_without_console_errors(
    root, shipped, emulated, tmp_path
):
    """The page built from a store with both shipped runs and a foreign file, loaded from disk
    (no server, no network) by a real headless Chromium: one coloured point per judged
    summary row, one validity cell per run, pair and device, each run's section, and not one
    console error."""
    store = str(tmp_path / "runs.sqlite")
    llama = root / "tests/data/llama_bench/host-x86-p64-n16-d0-64.json"
    assert main(["register", store, shipped, emulated, str(llama)]) == 0
    page = tmp_path / "dashboard.html"
    assert main(["dashboard", store, str(page)]) == 0
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line or "ERROR" in line], console
    db = sqlite3.connect(store)
    rows = db.execute("SELECT count(*) FROM summary_rows").fetchone()[0]
    cells = db.execute("SELECT count(DISTINCT run_id || device || pair) FROM checks").fetchone()[0]
    db.close()
    points = re.findall(r'<path [^>]*aria-roledescription="point"[^>]*>', proc.stdout)
    assert len(points) == rows == 2
    assert all(re.search(r' fill="#[0-9a-f]{6}"', p) for p in points)  # a verdict's colour
    assert proc.stdout.count('aria-roledescription="rect mark"') == cells == 1 + 6 * 2
    assert proc.stdout.count('<h2 id="run-') == 3  # the two runs and the foreign file
    # each judged run's summary.md rendered (its tables, its headings under the run's), not
    # shown as Markdown text
    assert proc.stdout.count('<div class="summary">') == 2
    assert proc.stdout.count("<h4>Verdicts</h4>") == 2 and "|---|" not in proc.stdout
