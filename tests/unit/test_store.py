"""The results store on the shipped archive (benchmarks/results/host-sme2-archive.tar.gz, a
real run of the paper's two MNN builds on this host): registered once, never twice, a
tampered copy refused with the store unchanged, and the comparison's statistics against
SciPy's own Welch interval on the archive's real per-block ratios."""

from __future__ import annotations

import io
import json
import math
import shutil
import sqlite3
import subprocess
import tarfile

import numpy as np
import pytest
from scipy import stats as sps

from mnnrepro.errors import DataError
from mnnrepro.store.__main__ import main
from mnnrepro.store.compare import block_log_ratios, compare_runs, welch_ratio
from mnnrepro.store.register import register_archive
from mnnrepro.store.schema import open_store

TABLES = ("runs", "invocations", "summary_rows", "checks", "devices", "engines")


@pytest.fixture
def shipped(root):
    return str(root / "benchmarks" / "results" / "host-sme2-archive.tar.gz")


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
        "runs": 1, "invocations": 40, "summary_rows": 2, "checks": 3, "devices": 1, "engines": 2
    }  # fmt: skip
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
    with pytest.raises(DataError, match="a results store of schema 0, not 1"):
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
    table = compare_runs(str(store), [run_id[:8]])
    assert list(table["phase"]) == ["prefill", "decode"] and table["change_vs_first"].isna().all()


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
        compare_runs(store, [mnn_run])


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not CHROMIUM, reason="no Chromium (.ci/run installs Debian's chromium)")
def test_the_dashboard_renders_in_headless_chromium_without_console_errors(root, shipped, tmp_path):
    """The page built from a store with the shipped run and a foreign file, loaded from disk
    (no server, no network) by a real headless Chromium: one drawn point per judged summary
    row, each run's section, and not one console error."""
    store = str(tmp_path / "runs.sqlite")
    llama = root / "tests/data/llama_bench/host-x86-p64-n16-d0-64.json"
    assert main(["register", store, shipped, str(llama)]) == 0
    page = tmp_path / "dashboard.html"
    assert main(["dashboard", store, str(page)]) == 0
    proc = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line or "ERROR" in line], console
    rows = sqlite3.connect(store).execute("SELECT count(*) FROM summary_rows").fetchone()[0]
    assert proc.stdout.count('aria-roledescription="point"') == rows == 2
    assert proc.stdout.count('<h2 id="run-') == 2  # the judged run and the foreign file
