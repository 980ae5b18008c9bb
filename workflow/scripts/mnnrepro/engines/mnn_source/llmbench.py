"""MNN's llm_bench: command lines, and parsers for its Markdown table and its -j JSON.

Formats (release 3.6.1 and later; see tests/data/llm_bench/ for real captures):

* stdout: `The device supports: ...` (and sometimes `CPU Group:` lines), then a Markdown table.
  The speed column is `t/s`, or `speed(tok/s)`. Test cells are `ppN`, `tgN`, `ppN+tgM`, or
  `prompt=N<br>decode=M` (the `-kv true` column `llm_demo`). A speed cell is `mean ± sd`, or
  `mean ± sd<br>mean ± sd` when it holds prefill and decode.
* JSON (`-j`): one object whose header describes the first configuration only; `results` holds
  `prefill`/`decode` entries (`tps`, `std`) and `prefill_and_decode` entries with
  `prefill_tps`/`decode_tps` (absent at 3.6.1 for `-pg`, whose combined row has one number).

Both parsers return the same tidy rows: phase (`prefill`, `decode` or `combined`), tokens,
prompt_len, generate_len, tps, std, plus the header fields."""

from __future__ import annotations

import json
import re

from mnnrepro.errors import ReproError

SUPPORTS_PREFIX = "The device supports:"


_SPEED = re.compile(r"^\s*([0-9.]+|nan|inf)\s*(?:±\s*([0-9.]+|nan|inf))?\s*$")


_PRECISIONS = {0: "Normal", 1: "High", 2: "Low"}


class LlmBenchParseError(ReproError, ValueError):
    pass


def build_args(
    binary: str,
    model_config: str,
    prompt_tokens: int,
    generate_tokens: int,
    threads: int,
    precision: int,
    json_out: str,
    repetitions: int = 1,
    kv: bool = True,
) -> list[str]:
    """One configuration per invocation (the JSON header keeps only the first one)."""
    args = [
        binary,
        "-m",
        model_config,
        "-t",
        str(threads),
        "-c",
        str(precision),
        "-p",
        str(prompt_tokens),
        "-n",
        str(generate_tokens),
        "-rep",
        str(repetitions),
        "-j",
        json_out,
    ]
    if kv:
        args += ["-kv", "true"]
    # flash attention stated, not left to the version's default (the gate's attention_mode 8)
    return [*args, "-fa", "1"]


def supports_line(text: str) -> str:
    for line in text.splitlines():
        if line.startswith(SUPPORTS_PREFIX):
            return line.strip()
    return ""


def _speed(cell: str) -> tuple[float, float]:
    match = _SPEED.match(cell)
    if not match:
        raise LlmBenchParseError(f"cannot read speed cell {cell!r}")
    std = match.group(2)
    return float(match.group(1)), float(std) if std is not None else float("nan")


def _tests(cell: str) -> list[tuple[str, int]]:
    """`pp64` -> [(prefill, 64)]; `pp128+tg32` / `prompt=128<br>decode=32` -> both."""
    cell = cell.strip()
    kv = re.fullmatch(r"prompt=(\d+)<br>decode=(\d+)", cell)
    if kv:
        return [("prefill", int(kv.group(1))), ("decode", int(kv.group(2)))]
    parts = []
    for part in cell.split("+"):
        m = re.fullmatch(r"(pp|tg)(\d+)", part)
        if not m:
            raise LlmBenchParseError(f"cannot read test cell {cell!r}")
        parts.append(("prefill" if m.group(1) == "pp" else "decode", int(m.group(2))))
    return parts


def parse_table(text: str) -> list[dict]:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 2:
        raise LlmBenchParseError("no Markdown table in llm_bench output")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    speed_col = next((h for h in ("t/s", "speed(tok/s)") if h in header), None)
    test_col = next((h for h in ("test", "llm_demo") if h in header), None)
    if speed_col is None or test_col is None:
        raise LlmBenchParseError(f"unexpected llm_bench table header {header}")
    rows = []
    for line in lines[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        rows += table_row(cells, test_col, speed_col, line)
    return rows


def table_row(cells: dict, test_col: str, speed_col: str, line: str) -> list[dict]:
    """One table row's results: a speed per test, or (3.6.1 -pg) one combined number for
    prefill + decode."""
    tests = _tests(cells[test_col])
    speeds = [_speed(s) for s in cells[speed_col].split("<br>")]
    lens = dict(tests)
    base = {
        "model": cells.get("model", ""),
        "backend": cells.get("backend", ""),
        "threads": int(cells["threads"]) if "threads" in cells else None,
        "precision": cells.get("precision", ""),
        "test": cells[test_col],
    }
    lengths = {"prompt_len": lens.get("prefill"), "generate_len": lens.get("decode")}
    if len(tests) == len(speeds):
        return [
            {**base, "phase": phase, "tokens": tokens, "tps": tps, "std": std, **lengths}
            for (phase, tokens), (tps, std) in zip(tests, speeds, strict=True)
        ]
    if len(speeds) == 1:
        (tps, std), tokens = speeds[0], sum(lens.values())
        return [{**base, "phase": "combined", "tokens": tokens, "tps": tps, "std": std, **lengths}]
    raise LlmBenchParseError(f"{len(speeds)} speeds for tests {tests} in {line!r}")


def settings_ran(json_text: str) -> dict:
    """What llm_bench says it ran (its JSON header: threads, precision, memory, power, backend),
    with its fixed warm-up (it runs rep + 1 times and drops the first)."""
    doc = json.loads(json_text)
    levels = {code: name.lower() for code, name in _PRECISIONS.items()}
    return {
        "thread_num": doc.get("threads"),
        "precision": levels.get(doc.get("precision")),
        "memory": levels.get(doc.get("memory")),
        "power": levels.get(doc.get("power")),
        "backend_type": str(doc.get("backend", "")).lower(),
        "warmup": 1,
    }


def parse_json(text: str) -> list[dict]:
    doc = json.loads(text)
    base = {
        "model": doc["model"],
        "backend": doc["backend"],
        "threads": doc["threads"],
        "precision": _PRECISIONS.get(doc["precision"], str(doc["precision"])),
    }
    rows = []
    for r in doc["results"]:
        kind = r["type"]
        lens = {"prompt_len": r.get("prompt_len"), "generate_len": r.get("generate_len")}
        if kind in ("prefill", "decode"):
            tokens = r["prompt_len"] if kind == "prefill" else r["generate_len"]
            rows.append(
                {**base, **lens, "phase": kind, "tokens": tokens, "tps": r["tps"], "std": r["std"]}
            )
        elif kind == "prefill_and_decode":
            if "prefill_tps" in r:
                rows.append(
                    {
                        **base,
                        **lens,
                        "phase": "prefill",
                        "tokens": r["prompt_len"],
                        "tps": r["prefill_tps"],
                        "std": r["prefill_std"],
                    }
                )
                rows.append(
                    {
                        **base,
                        **lens,
                        "phase": "decode",
                        "tokens": r["generate_len"],
                        "tps": r["decode_tps"],
                        "std": r["decode_std"],
                    }
                )
            # else: 3.6.1 -pg writes no speed for the combined test; the table has it
        else:
            raise LlmBenchParseError(f"unknown llm_bench result type {kind!r}")
    return rows


def cross_check(table_rows: list[dict], json_rows: list[dict]) -> None:
    """The table rounds to 2 decimals; every JSON speed must match its table row.

    Threads are not compared: the JSON header holds the first configuration's only.
    """
    table = [r for r in table_rows if r["phase"] != "combined"]
    if len(table) != len(json_rows):
        raise LlmBenchParseError(
            f"table has {len(table)} prefill/decode rows, JSON has {len(json_rows)}"
        )
    for t, j in zip(table, json_rows, strict=True):
        same = (t["phase"], t["tokens"]) == (j["phase"], j["tokens"])
        if not same or abs(t["tps"] - round(j["tps"], 2)) > 0.0051:
            raise LlmBenchParseError(f"table row {t} disagrees with JSON row {j}")
