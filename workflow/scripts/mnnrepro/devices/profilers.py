"""Which functions an invocation executed: one profiler per device kind, one shape of answer.

- this host: Linux `perf record -e cpu-clock` (a sampling profiler: needs no hardware counter,
  works at perf_event_paranoid 2), reported by shared object and symbol with `perf report`;
- a phone: `simpleperf record -e cpu-clock` on the phone, reported there by `simpleperf report
  --sort dso,symbol -n` (the format simpleperf's documentation shows: a header, then
  `Overhead  Sample  Shared Object  Symbol` rows);
- QEMU user mode: executed translation blocks, counted, not sampled. QEMU 11's static
  `qemu-aarch64` has no TCG plugins, but `-d exec,nochain` logs every block it executes (chaining
  off, so a loop's block is logged at every iteration) and `-dfilter` limits that to the engine
  libraries' code. Their guest addresses come from a first run's `-d strace` (`openat` names the
  file, `mmap` of that descriptor with PROT_EXEC places it); `-R` (a reserved guest address
  space) makes QEMU place them at the same addresses in both runs, and the second run's own
  strace must say so. Blocks are attributed to functions from the libraries' ELF symbols.

Each answer is {"profiler", "unit", "rows": [{"dso", "symbol", "count"}], "total"}; a row whose
symbol did not resolve has symbol None (the check in analysis/attribution.py fails on those).
"""

from __future__ import annotations

import os
import re
import shutil

from mnnrepro.errors import ReproError

# a profile's row for what ran outside the engine's libraries (where a profiler counts it)
OUTSIDE = "[outside the engine libraries]"


class ProfilerError(ReproError, RuntimeError):
    pass


def require(tool: str, what: str) -> str:
    """The profiler's path, or an error naming it: a missing profiler never passes a check."""
    found = shutil.which(tool)
    if not found:
        raise ProfilerError(f"kernel attribution needs `{tool}` ({what}), which is not installed")
    return found


# ---------------------------------------------------------------- perf (this host)

PERF_HINT = "Linux perf: Debian's linux-perf package"


def perf_record_command(perf: str, argv: list[str], data: str, hz: int) -> list[str]:
    return [perf, "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-o", data, "--", *argv]


def perf_report_command(perf: str, data: str) -> list[str]:
    return [
        *(perf, "report", "-i", data, "--stdio", "-q", "--no-children", "--no-demangle"),
        *("--sort", "dso,sym", "-F", "sample,dso,sym", "-t", ";"),
    ]


UNRESOLVED = re.compile(r"^0x[0-9a-f]+$", re.I)


def parse_perf_report(text: str) -> list[dict]:
    """`perf report -F sample,dso,sym -t ';'` rows -> [{dso, symbol, count}]; a symbol perf
    could not name (an address, `[unknown]`) is None."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(";")]
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        dso, symbol = parts[1], ";".join(parts[2:]).strip()
        symbol = re.sub(r"^\[[.kgu]\]\s*", "", symbol)
        rows.append({"dso": dso_name(dso), "symbol": resolved(symbol), "count": int(parts[0])})
    return rows


def resolved(symbol: str) -> str | None:
    return None if not symbol or UNRESOLVED.match(symbol) or symbol == "[unknown]" else symbol


def dso_name(path: str) -> str:
    return os.path.basename(path.strip()) or path


# ---------------------------------------------------------------- simpleperf (a phone)

SIMPLEPERF_ROW = re.compile(r"^\s*([\d.]+)%\s+(\d+)\s+(\S+)\s+(.*?)\s*$")


def simpleperf_record_command(simpleperf: str, argv: list[str], data: str, hz: int) -> list[str]:
    return [simpleperf, "record", "-e", "cpu-clock", "-f", str(hz), "-o", data, "--", *argv]


def simpleperf_report_command(simpleperf: str, data: str) -> list[str]:
    return [simpleperf, "report", "-i", data, "--sort", "dso,symbol", "-n"]


def parse_simpleperf_report(text: str) -> list[dict]:
    """`simpleperf report --sort dso,symbol -n` -> [{dso, symbol, count}] (rows after the
    `Overhead  Sample  Shared Object  Symbol` header; an unnamed symbol is None)."""
    rows, in_table = [], False
    for line in text.splitlines():
        if line.split()[:2] == ["Overhead", "Sample"]:
            in_table = True
            continue
        match = SIMPLEPERF_ROW.match(line) if in_table else None
        if match:
            _share, count, dso, symbol = match.groups()
            rows.append({"dso": dso_name(dso), "symbol": resolved(symbol), "count": int(count)})
    if not in_table:
        raise ProfilerError("simpleperf report printed no table (no `Overhead  Sample` header)")
    return rows


# ---------------------------------------------------------------- QEMU (executed blocks)


def answer(profiler: str, unit: str, rows: list[dict]) -> dict:
    return {
        "profiler": profiler,
        "unit": unit,
        "rows": rows,
        "total": sum(r["count"] for r in rows),
    }


def simpleperf_profile(device, argv: list[str], timeout: float, env: dict | None, hz: int):
    """A phone: the system's simpleperf (Android carries it in /system/bin), or one the config
    names (`devices.<name>.adb.simpleperf`: the NDK's static arm64 simpleperf, pushed first).
    Recorded and reported on the phone, against the files it ran."""
    local = device.spec.get("simpleperf")
    if local:
        simpleperf = device.stage(local, "tools")
    else:
        found = device.run(["sh", "-c", "command -v simpleperf"], 60)
        simpleperf = found.stdout.strip()
        if not found.ok or not simpleperf:
            raise ProfilerError(
                f"device {device.name}: kernel attribution needs `simpleperf`, which this "
                "phone does not have; set devices.<name>.adb.simpleperf to the NDK's "
                "simpleperf/bin/android/arm64/simpleperf"
            )
    data = device.scratch("perf.data")
    result = device.run(simpleperf_record_command(simpleperf, argv, data, hz), timeout, env)
    if not result.ok:
        return result, {}
    report = device.run(simpleperf_report_command(simpleperf, data), 600)
    if not report.ok:
        raise ProfilerError(f"device {device.name}: simpleperf report failed: {report.stderr}")
    rows = parse_simpleperf_report(report.stdout)
    return result, answer("simpleperf record -e cpu-clock", "samples", rows)
