"""Reading the workflow's own records and tables back, verified.

Every reader of a record goes through `read_record` (JSON, then the record's schema in
workflow/schemas/records.schema.yaml) and every reader of a table through `read_table`, so a
damaged, truncated or hand-edited file stops the job with one line that names the file, what
was expected and what was found. The content-hash chain (raw records -> run index ->
bench.csv -> summary) is checked with `check_sha256` and `check_same_table`."""

from __future__ import annotations

import csv
import functools
import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema
import yaml

from mnnrepro.errors import DataError
from mnnrepro.files import read_json, sha256_file

if TYPE_CHECKING:  # pandas is imported where a table is read: the Snakefile reads none
    # heavy: the table readers only
    import pandas as pd

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "records.schema.yaml"

# what to do about a bad file of each kind (said after the problem)
HINTS = {
    "raw_record": "delete it to re-measure that repetition",
    "run_index": "delete it to re-index the raw records (nothing is measured again)",
    "greedy": "delete it to run the correctness gate again",
    "device_facts": "delete it to collect the device facts again",
    "validity": "delete it to check validity again",
    "pair_modes": "delete it to decide the pairs' modes on the device again",
    "engine": "delete it to describe or build the engine again",
    "model_manifest": "delete it to prepare the model again",
    "summary": "delete it to compute the summary again",
    "model_layout": "delete it to describe the model's files again",
    "bandwidth": "delete it to measure the bandwidth again (rule measure_bandwidth)",
}


@functools.cache
def _schemas() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))


def _field(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def check_record(record, kind: str, path: str | os.PathLike) -> None:
    """Raise DataError naming path and the first field that breaks the `kind` schema."""
    schema = {**_schemas(), "$ref": f"#/$defs/{kind}"}
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(record)
    )
    if error is None:
        return
    where = f"`{_field(error)}`"
    if error.validator == "required":
        problem = f"{error.message} in {where}"
    else:
        problem = f"field {where} is {error.instance!r:.80} ({error.message:.120})"
    raise DataError(path, f"not a valid {kind.replace('_', ' ')}: {problem}", HINTS[kind])


def check_greedy_steps(record: dict, path: str | os.PathLike) -> None:
    """A greedy record checked against itself: at every step with recorded logits, the token
    the answer holds must be that step's top-1 (greedy decoding chooses it). A record whose
    tokens disagree with its own logits was edited or mis-recorded: refused, naming the
    variant, the prompt and the step."""
    for variant, payload in record.items():
        forced = [
            a
            for key in ("teacher_forced", "teacher_forced_by_device")
            for answers in payload.get(key, {}).values()
            for a in answers
        ]
        for answer in [*payload.get("answers", []), *forced]:
            tokens, steps = answer.get("tokens") or [], answer.get("steps") or []
            for i, (token, step) in enumerate(zip(tokens, steps, strict=False)):
                top = step.get("top") if isinstance(step, dict) else None
                if not top:
                    continue
                if int(top[0][0]) != int(token):
                    raise DataError(
                        path,
                        f"variant {variant}, prompt {answer.get('prompt')!r}: the token at "
                        f"step {i} is {token}, but that step's top-1 logit is token "
                        f"{top[0][0]} (a greedy answer takes the top-1)",
                        HINTS["greedy"],
                    )


def read_record(path: str | os.PathLike, kind: str):
    """A record of one kind (see HINTS), parsed and checked against its schema (and, for a
    greedy record, against its own logits)."""
    record = read_json(path, HINTS[kind])
    check_record(record, kind, path)
    if kind == "greedy":
        check_greedy_steps(record, path)
    return record


def read_table(path: str | os.PathLike, columns: list[str], hint: str) -> pd.DataFrame:
    """A CSV table the workflow wrote, with at least `columns`; else one DataError line."""
    # heavy: the table readers only
    import pandas as pd

    try:
        table = pd.read_csv(path)
    except FileNotFoundError:
        raise DataError(path, "missing", hint) from None
    except pd.errors.EmptyDataError:
        raise DataError(path, "empty (no header line)", hint) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise DataError(path, f"not a CSV table ({str(err).strip()})", hint) from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise DataError(path, f"columns {missing} missing (has {list(table.columns)})", hint)
    return table


def read_rows(path: str | os.PathLike, columns: list[str], hint: str) -> list[dict]:
    """A CSV table the workflow wrote, as rows of strings (the csv module: no pandas, for what
    the plan reads while the DAG is built), with at least `columns`; else one DataError line
    naming the file and the missing columns."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in columns if c not in header]
            if missing:
                raise DataError(path, f"columns {missing} missing (has {header})", hint)
            return list(reader)
    except FileNotFoundError:
        raise DataError(path, "missing", hint) from None
    except (UnicodeDecodeError, csv.Error) as err:
        raise DataError(path, f"not a CSV table ({err})", hint) from None


def check_sha256(path: str | os.PathLike, expected: str, recorded_in: str, hint: str) -> None:
    """The file's content must be what `recorded_in` recorded for it."""
    try:
        actual = sha256_file(path)
    except FileNotFoundError:
        raise DataError(path, f"missing (listed in {recorded_in})", hint) from None
    if actual != expected:
        raise DataError(
            path,
            f"content changed since {recorded_in} recorded it "
            f"(sha256 {actual[:12]}…, recorded {expected[:12]}…)",
            hint,
        )


def check_same_table(path: str | os.PathLike, expected: pd.DataFrame, source: str, hint: str):
    """The CSV file at path must hold exactly `expected` (re-derived from `source`); the first
    difference is named by row and column."""
    wanted = expected.to_csv(index=False)
    try:
        found = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(path, "missing", hint) from None
    if found == wanted:
        return
    have, want = list(csv.reader(io.StringIO(found))), list(csv.reader(io.StringIO(wanted)))
    if not have or have[0] != want[0]:
        raise DataError(path, f"columns differ from {source}'s ({want[0]})", hint)
    header = want[0]
    for number, (row, good) in enumerate(zip(have[1:], want[1:], strict=False), start=2):
        if row == good:
            continue
        found_at = dict(zip(header, row, strict=False))
        wanted_at = dict(zip(header, good, strict=True))
        column = next((h for h in header if found_at.get(h) != wanted_at[h]), "?")
        raise DataError(
            path,
            f"line {number}, column `{column}` is {found_at.get(column)!r} but {source} "
            f"give {wanted_at[column]!r} ({wanted_at.get('raw_file') or 'row ' + str(number)})",
            hint,
        )
    raise DataError(path, f"has {len(have) - 1} rows, {source} give {len(want) - 1}", hint)


def chain(files: dict[str, str | os.PathLike]) -> dict[str, str]:
    """name -> sha256 of the tables a summary was derived from and wrote (summary.json's
    `chain`): whoever reads one of them later checks it against this."""
    return {name: sha256_file(path) for name, path in files.items()}


def read_chained_table(path: str | os.PathLike, summary_path: str | os.PathLike) -> pd.DataFrame:
    """bench.csv or summary.csv, after checking it is the one summary.json was made with."""
    summary = read_record(summary_path, "summary")
    name = Path(path).name
    if name not in summary["chain"]:
        raise DataError(summary_path, f"`chain` has no sha256 of {name}", HINTS["summary"])
    hint = "delete it (and summary.json) to derive both again"
    check_sha256(path, summary["chain"][name], str(summary_path), hint)
    return read_table(path, [], hint)
