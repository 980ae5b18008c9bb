"""The fault matrix: each fault a phone (or this host) can throw at a run, at each stage it can
strike, run for real: the loopback ADB phone behind a real adb server (tests/loopback_adbd.py
injects the fault at a chosen moment), the workflow's own device code (runs/on_device.py,
devices/adb.py), the tiny synthetic model through the prebuilt engine. For every cell it
records what happened and checks what the workflow promises: no completed repetition lost or
changed (byte for byte, as they were when the fault struck), nothing half-written under a
final name (host or phone), the resumed schedule the planned one, a faulted invocation
measured again and counted, and the verdict of the faulted run equal to the verdict of the
same records as if no fault had struck.

Used by tests/unit/test_faults.py (every cell, asserted) and benchmarks/fault_matrix.py (the
table in benchmarks/results/faults.md). Interrupting Snakemake itself (Ctrl-C, kill -9) at each
stage is tests/workflow/test_workflow_adb.py's."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BLOCKS = 2  # blocks of the benchmark's a/b schedule in a cell (4 invocations)
THIRD = 3  # a benchmark's fault strikes its third invocation: two are done, one to lose


@dataclass(frozen=True)
class Cell:
    fault: str  # what goes wrong, in words
    stage: str  # push, gate, benchmark, before builds
    where: str  # phone or host
    inject: tuple = ()  # loopback_adbd.inject arguments (phone) or the host's fault
    expect: str = "survived"  # survived | ended, then resumed | refused
    bench: dict = field(default_factory=dict)  # settings beside the short bench's
    spec: dict = field(default_factory=dict)  # device settings beside the loopback phone's

    @property
    def name(self) -> str:
        return f"{self.fault} / {self.stage} / {self.where}".replace(" ", "-")


ENGINE = r"echo \$! >"  # a benchmark invocation's shell (devices/phone_readings.py)
GATE = r"python_runner\.py.* greedy"
# a hung invocation is stopped after this long; the invocations around it must finish well
# within it on a busy machine (a test run beside QEMU's: 8 s once was not enough there)
HANG_TIMEOUT_S = 20

CELLS = [
    Cell("transport lost", "push", "phone", ("^sync:", "drop")),
    Cell("transport lost", "gate", "phone", (GATE, "drop")),
    Cell("transport lost", "benchmark", "phone", (ENGINE, "drop", 0.3, 0.0, THIRD)),
    Cell("reboot", "push", "phone", ("^sync:", "reboot", 0.0, 2.0)),
    Cell("reboot", "gate", "phone", (GATE, "reboot", 0.0, 2.0)),
    Cell("reboot", "benchmark", "phone", (ENGINE, "reboot", 0.3, 2.0, THIRD)),
    Cell("adb server restarted", "benchmark", "phone", (ENGINE, "stall", 0.0, 0.0, THIRD)),
    Cell("storage full", "push", "phone", (r"\.part$", "full"), "ended, then resumed"),
    Cell(
        "engine killed (SIGKILL)",
        "benchmark",
        "phone",
        (ENGINE, "kill", 0.0, 0.0, THIRD),
        bench={"retries": 1},
    ),
    Cell("engine killed (SIGKILL)", "gate", "phone", (GATE, "kill"), "ended, then resumed"),
    Cell(
        "hangs past its timeout",
        "benchmark",
        "phone",
        (ENGINE, "stop", 0.0, 0.0, THIRD),
        bench={"retries": 1, "timeout_s": HANG_TIMEOUT_S},
    ),
    Cell(
        "never comes back",
        "benchmark",
        "phone",
        (ENGINE, "vanish", 0.3, 0.0, THIRD),
        "ended, then resumed",
        spec={"reconnect_wait_s": 3},
    ),
    Cell("engine killed (SIGKILL)", "benchmark", "host", ("kill",), bench={"retries": 1}),
    Cell(
        "hangs past its timeout",
        "benchmark",
        "host",
        ("stop",),
        bench={"retries": 1, "timeout_s": HANG_TIMEOUT_S},
    ),
    Cell("screen locked", "before builds", "phone", ("screen", "Asleep"), "refused"),
    Cell("dozing", "before builds", "phone", ("screen", "Dozing"), "refused"),
    Cell("battery low", "before builds", "phone", ("battery", 9), "refused"),
    Cell(
        "not charging",
        "before builds",
        "phone",
        ("unplugged",),
        "refused",
        spec={"ready": {"charging": "required"}},
    ),
    Cell("storage too small", "before builds", "phone", ("df", 200), "refused"),
    Cell("adb unauthorized", "before builds", "phone", ("unauthorized",), "refused"),
]


def digests(root: Path) -> dict[str, str]:
    """Every raw record under root: its path -> sha256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("rep-*.json"))
    }


def half_written(*roots: Path) -> list[str]:
    """Files a cut-short write leaves (atomic writes' temporaries, pushes' parts)."""
    return sorted(
        str(p)
        for root in roots
        for p in root.rglob("*")
        if p.is_file() and (".part" in p.name or p.name.endswith(".tmp"))
    )


def verdict_of(index: list[dict], raw_dir: Path, strip_faults: bool = False) -> dict:
    """The pair a -> b's verdict per phase from the records index lists, as the summary
    judges (equality: the two variants of one engine); strip_faults judges the same records
    as if no fault had struck them (no retry counted, no loss listed)."""
    from conftest import design_of

    from mnnrepro.analysis.summary import summarize
    from mnnrepro.analysis.tables import bench_table
    from mnnrepro.files import read_json, sha256_file, write_json

    if strip_faults:
        clean = raw_dir.parent / f"{raw_dir.name}-as-unfaulted"
        runs = []
        for entry in index:
            record = read_json(entry["raw"])
            record["attempts"] = 1
            record.pop("device_lost", None)
            path = clean / Path(entry["raw"]).relative_to(raw_dir)
            write_json(path, record)
            runs.append({**entry, "raw": str(path), "sha256": sha256_file(path)})
        index = runs
    device = read_json(index[0]["raw"])["device"]
    indexes = {
        "runs.json": {
            "experiment": "faults",
            "model": "tiny",
            "emulated": False,
            "device": device,
            "runs": index,
        }
    }
    config = {
        "experiment": "faults",
        "comparison": {"baseline": "a", "treatment": "b", "tolerance": 10.0, "aa_margin": 10.0},
        "stats": {"ci_level": 0.95, "seed": 1},
        "bench": {},
        "variants": {},
    }
    summary = summarize(
        bench_table(indexes),
        {(device, "tiny"): {"checks": []}},
        design_of(config),
        {(("a", "b"), device): "equal"},
    )
    return dict(zip(summary["phase"], summary["verdict"], strict=True))


# ---- the stages, as the workflow's scripts run them ------------------------------------------


def push(spec: dict, model: Path) -> dict:
    """push_to_device.py's step: on the device, survived."""
    from mnnrepro.runs.on_device import on_device, surviving
    from mnnrepro.runs.staging import push_receipt

    with on_device("phone", {"adb": spec, "lock_wait_s": None}, "the push") as device:
        files = {"mnn": str(model)}
        return surviving(device, "the push", lambda: push_receipt(device, files, "tiny"))


def gate(spec: dict, receipt: dict) -> dict:
    """run_greedy.py's step (one prompt, one variant): on the device, survived."""
    from conftest import PREBUILT_ENGINE, full_variant

    from mnnrepro.runs.greedy import run_greedy
    from mnnrepro.runs.on_device import on_device, surviving

    stage = "the correctness gate"
    with on_device("phone", {"adb": spec, "lock_wait_s": None}, stage) as device:
        return surviving(
            device,
            stage,
            lambda: run_greedy(
                device, receipt, PREBUILT_ENGINE, full_variant("v", {"engine": "e"}), ["hi"], 4, 120
            ),
        )


def benchmark(device_of, receipt: dict, bench: dict, raw_dir: Path) -> list[dict]:
    """run_bench's schedule (a, b interleaved, BLOCKS blocks) on device_of()'s device."""
    from conftest import two_variant_specs

    from mnnrepro.runs.benchmark import run_schedule
    from mnnrepro.runs.schedule import interleaved

    device = device_of()
    try:
        index, _ = run_schedule(
            device, interleaved(["a", "b"], BLOCKS), two_variant_specs(), receipt, bench, raw_dir
        )
    finally:
        device.close()
    return index


# ---- faults on this host (its device runs the engine as a child process) -------------------


def host_fault(kind: str, snapshot, raw_dir: Path, over: threading.Event) -> threading.Thread:
    """Once the third invocation's engine runs (a child of this process running the prebuilt
    runner), SIGKILL (`kill`) or SIGSTOP (`stop`) it, after snapshot(); never once the cell
    is over (a later test's engine is not the cell's)."""

    def strike():
        while not over.is_set():
            done = len(digests(raw_dir))  # then the engines running now: the third's
            running = children_running("python_runner.py") if done >= THIRD - 1 else []
            if running:
                snapshot()
                for pid in running:
                    os.kill(pid, signal.SIGKILL if kind == "kill" else signal.SIGSTOP)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=strike, daemon=True)
    thread.start()
    return thread


def children_running(word: str) -> list[int]:
    """This process's descendants whose command line holds word."""
    mine, found = {os.getpid()}, []
    for _ in range(3):  # children, grandchildren, their children
        for entry in Path("/proc").iterdir():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                argv = (entry / "cmdline").read_bytes().decode().split("\0")
            except (OSError, IndexError, ValueError):
                continue
            if int(stat[1]) in mine and entry.name.isdigit():
                mine.add(int(entry.name))
                engine = os.path.basename(argv[0]).startswith("python")  # not a shell's fork
                if engine and word in " ".join(argv) and int(entry.name) not in found:
                    found.append(int(entry.name))
    return found


def kill_adb_server(port: int) -> None:
    """The adb server restarted under the run: killed (the workflow starts it again)."""
    from mnnrepro.devices.adb_server import adb_binary

    subprocess.run([adb_binary(), "-P", str(port), "kill-server"], capture_output=True, check=False)


# ---- one cell ----------------------------------------------------------------------------------


def run_cell(cell: Cell, root: Path, adb_port: int, model: Path) -> dict:
    """Run cell in root (a fresh loopback phone, or this host): its row of the matrix."""
    from conftest import (
        SHORT_SETTINGS,
        full_adb_spec,
        full_bench,
        start_loopback_phone,
        stop_loopback_phone,
    )

    bench = full_bench(**{**SHORT_SETTINGS, **cell.bench})
    if cell.where == "host":
        return host_cell(cell, root, model, bench)
    phone, spec = start_loopback_phone(root / "phone", adb_port)
    spec = full_adb_spec(**{**spec, **cell.spec})  # a cell's partial `ready`: the rest defaults
    try:
        if cell.stage == "before builds":
            return refused_cell(cell, phone, spec)
        return phone_cell(cell, phone, spec, adb_port, model, bench, root / "raw")
    finally:
        stop_loopback_phone(phone, adb_port)


def phone_cell(cell, phone, spec, adb_port, model, bench, raw_dir) -> dict:
    from mnnrepro.devices.adb import AdbDevice
    from mnnrepro.errors import ReproError
    from mnnrepro.runs.staging import check_receipt

    at_strike: dict = {}

    def snapshot(fault):
        at_strike.setdefault("raw", digests(raw_dir))
        if cell.fault == "adb server restarted":  # the moment: the engine started
            threading.Timer(0.3, kill_adb_server, args=(adb_port,)).start()

    phone.on_strike = snapshot
    receipt = None if cell.stage == "push" else push(spec, model)
    phone.inject(*cell.inject)
    stages = {
        "push": lambda: push(spec, model),
        "gate": lambda: gate(spec, receipt),
        "benchmark": lambda: benchmark(lambda: AdbDevice("phone", spec), receipt, bench, raw_dir),
    }
    ended = ""
    try:
        result = stages[cell.stage]()
    except ReproError as err:
        ended = str(err).splitlines()[0]
        if cell.inject[1:2] == ("vanish",):
            phone.come_back()
        result = stages[cell.stage]()  # the rerun
    receipt = result if cell.stage == "push" else receipt
    index = benchmark(lambda: AdbDevice("phone", spec), receipt, bench, raw_dir)
    device = AdbDevice("phone", spec)
    check_receipt(device, receipt)  # every pushed file on the phone as pushed
    device.close()
    return outcome_row(cell, phone.struck, ended, at_strike, index, raw_dir, phone.sandbox)


def host_cell(cell, root: Path, model: Path, bench: dict) -> dict:
    from mnnrepro.devices.local import LocalDevice
    from mnnrepro.runs.staging import push_receipt

    raw_dir = root / "raw"
    at_strike: dict = {}
    device = LocalDevice("host")
    receipt = push_receipt(device, {"mnn": str(model)}, "tiny")
    device.close()
    over = threading.Event()
    struck = host_fault(
        cell.inject[0], lambda: at_strike.setdefault("raw", digests(raw_dir)), raw_dir, over
    )
    try:
        index = benchmark(lambda: LocalDevice("host"), receipt, bench, raw_dir)
    finally:
        over.set()
        struck.join(timeout=5)
    strikes = [{"fault": cell.inject[0]}] if at_strike else []
    return outcome_row(cell, strikes, "", at_strike, index, raw_dir, root / "none")


def refused_cell(cell, phone, spec) -> dict:
    """A phone not ready: set so, then the job that collects its facts (the first on it)."""
    from mnnrepro.errors import ReproError
    from mnnrepro.runs.on_device import on_device

    what, *value = cell.inject
    dumpsys = phone.sandbox / "dumpsys"
    if what == "screen":
        (dumpsys / "power.txt").write_text(f"  mWakefulness={value[0]}\nDisplay Power: state=OFF\n")
    elif what == "battery":
        text = (dumpsys / "battery.txt").read_text()
        (dumpsys / "battery.txt").write_text(text.replace("level: 87", f"level: {value[0]}"))
    elif what == "unplugged":
        text = (dumpsys / "battery.txt").read_text()
        (dumpsys / "battery.txt").write_text(
            text.replace("USB powered: true", "USB powered: false")
        )
    elif what == "df":
        (phone.sandbox / "df.txt").write_text(
            "Filesystem 1K-blocks Used Available Use% Mounted on\n"
            f"/dev/block/dm-50 116000000 115000000 {value[0] * 1024} 99% /data\n"
        )
    else:
        phone.unauthorized = True
    try:
        with on_device("phone", {"adb": spec, "lock_wait_s": None}, "collecting its facts"):
            refused = ""
    except ReproError as err:
        refused = str(err)
    return {
        "fault": cell.fault,
        "stage": cell.stage,
        "where": cell.where,
        "outcome": refused or "not refused",
        "expected": cell.expect,
        "refused": bool(refused) and "\n" not in refused,
    }


def outcome_row(cell, struck, ended, at_strike, index, raw_dir, phone_root) -> dict:
    """The cell's row: what happened, and every promise checked."""
    from mnnrepro.files import read_json
    from mnnrepro.runs.schedule import interleaved

    before = at_strike.get("raw", {})
    after = digests(raw_dir)
    records = [read_json(e["raw"]) for e in index]
    planned = [(i.variant, i.block) for i in interleaved(["a", "b"], BLOCKS)]
    ran = [(r["invocation"]["variant"], r["invocation"]["block"]) for r in records]
    verdict = verdict_of(index, raw_dir)
    unfaulted = verdict_of(index, raw_dir, strip_faults=True)
    return {
        "fault": cell.fault,
        "stage": cell.stage,
        "where": cell.where,
        "struck": len(struck),
        "outcome": f"ended: {ended}; rerun resumed" if ended else "survived",
        "expected": cell.expect,
        "reps_at_fault": len(before),
        "reps_after": len(after),
        "lost_or_changed": sorted(p for p, d in before.items() if after.get(p) != d),
        "half_written": half_written(raw_dir, phone_root),
        "same_schedule": ran == planned,
        "attempts": max(r.get("attempts", 1) for r in records),
        "device_lost": sum(len(r.get("device_lost", [])) for r in records),
        "verdict": verdict,
        "same_verdict": verdict == unfaulted,
    }
