"""Results this workflow did not make, imported as what they are: llama.cpp's `llama-bench -o
json` and MNN's `llm_bench -j` files. Their numbers enter `foreign_results` as the tool
reported them (llama-bench's samples where it kept them, llm_bench's mean and SD only),
marked `judged = 0`: no gate, schedule, interval or verdict is made up for them. A file is
keyed by its sha256: importing it again adds nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mnnrepro.errors import DataError
from mnnrepro.store.schema import insert_once, utc_now


def llama_bench_rows(tests: list[dict]) -> list[tuple]:
    """llama-bench's JSON: one test per row; n_gen 0 is prompt processing (prefill), else
    generation (decode) after n_depth tokens of context."""
    return [
        (
            "llama.cpp",
            t["build_commit"],
            t["model_filename"],
            "prefill" if t["n_gen"] == 0 else "decode",
            t["n_prompt"],
            t["n_gen"],
            t.get("n_depth", 0),
            t["n_threads"],
            t["avg_ts"],
            t["stddev_ts"],
            json.dumps(t.get("samples_ts")),
        )
        for t in tests
    ]


def llm_bench_rows(report: dict) -> list[tuple]:
    """MNN llm_bench's -j JSON (its header holds the first configuration only): prefill and
    decode per result, mean and SD of its repetitions (it keeps no single values)."""
    rows = []
    for r in report["results"]:
        phases = [("prefill", "prefill_tps", "prefill_std"), ("decode", "decode_tps", "decode_std")]
        for phase, mean, sd in phases if "prefill_tps" in r else [(r["type"], "tps", "std")]:
            rows.append(
                (
                    "MNN llm_bench",
                    None,
                    report["model"],
                    phase,
                    r.get("prompt_len"),
                    r.get("generate_len"),
                    None,
                    report["threads"],
                    r[mean],
                    r[sd],
                    None,
                )
            )
    return rows


def read_foreign(path: str) -> tuple[str, list[tuple]]:
    """(origin, rows) of a foreign results file; anything else is one DataError line."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(path, f"not a results file this store reads ({err})") from None
    try:
        if isinstance(data, list) and data and "avg_ts" in data[0]:
            return "foreign:llama-bench", llama_bench_rows(data)
        if isinstance(data, dict) and "results" in data:
            return "foreign:llm_bench", llm_bench_rows(data)
    except (KeyError, TypeError) as err:
        raise DataError(path, f"a results file without the field {err}") from None
    raise DataError(path, "neither llama-bench JSON (-o json) nor MNN llm_bench JSON (-j)")


def register_foreign(store: str, path: str) -> tuple[str, bool]:
    """(run id, whether it was added)."""
    run_id = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    origin, rows = read_foreign(path)

    def write(db) -> None:
        db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, 0, ?, ?, '{}', '')",
            (run_id, Path(path).name, origin, str(path), utc_now()),
        )
        slots = ", ".join("?" * 12)
        db.executemany(
            f"INSERT INTO foreign_results VALUES ({slots})", [(run_id, *r) for r in rows]
        )

    return run_id, insert_once(store, run_id, write)
