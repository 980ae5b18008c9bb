"""QEMU user mode's answer to which functions ran: the engine libraries' guest addresses from its
strace, its block log (-d exec,nochain) counted as it is written, per marked phase, and the
blocks attributed to the libraries' functions."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import tempfile
import threading
import time
from collections import Counter
from itertools import chain
from pathlib import Path
from typing import BinaryIO

from mnnrepro.devices.elf import read_symbols
from mnnrepro.devices.instruction_mix import CLASSES
from mnnrepro.devices.profilers import OUTSIDE, ProfilerError

# A reserved guest address space: QEMU then places every mapping itself, the same way in
# every run of the same command (without it the host's address randomization moves them).
QEMU_RESERVED_VA = "0x4000000000"


OPENAT = re.compile(r'openat\([^,]+,"([^"]+)",[^)]*\) = (\d+)')


MMAP = re.compile(
    r"mmap\((0x[0-9a-f]+|NULL),(\d+),([A-Z_|]+),[A-Z_|]+,(-?\d+),(0x[0-9a-f]+|\d+)\) = "
    r"(0x[0-9a-f]+)"
)


CLOSE = re.compile(r"close\((\d+)\) = 0")


def exec_mappings(strace: str, wanted: set[str]) -> list[dict]:
    """The executable mappings of the wanted files (basenames) in a QEMU `-d strace` log:
    [{path, start, size, offset}] in the order the loader made them."""
    open_fds: dict[str, str] = {}
    maps = []
    for line in strace.splitlines():
        if (m := OPENAT.search(line)) is not None:
            open_fds[m.group(2)] = m.group(1)
        elif (m := MMAP.search(line)) is not None:
            _hint, size, prot, fd, offset, start = m.groups()
            path = open_fds.get(fd)
            if path and "PROT_EXEC" in prot and os.path.basename(path) in wanted:
                maps.append(
                    {
                        "path": path,
                        "start": int(start, 16),
                        "size": int(size),
                        "offset": int(offset, 0),
                    }
                )
        elif (m := CLOSE.search(line)) is not None:
            open_fds.pop(m.group(1), None)
    return maps


def dfilter(maps: list[dict]) -> str:
    return ",".join(f"0x{m['start']:x}+0x{m['size']:x}" for m in maps)


# `-d exec` lines are `Trace <cpu>: <host tb> [<flags>/<guest pc>/<cflags>/<...>] ...`; the
# other lines of the log are strace's (a line starts after a newline: a chunk is read with the
# newline before it)
TRACE_PC = re.compile(rb"\nTrace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")


NOT_TRACE = re.compile(rb"\n(?!Trace )([^\n]+)")


TRACE = b"\nTrace "


def count_exec_log(stream: BinaryIO, chunk: int = 1 << 22) -> tuple[Counter, list[str]]:
    """A `-d exec,nochain,strace` log (bytes) -> (executed blocks per guest PC, the strace
    lines)."""
    segments, _, other = count_exec_segments(stream, chunk)
    return segments[OUTSIDE_PHASES], other


OUTSIDE_PHASES = ""  # count_exec_segments' segment of the blocks outside every marked phase


def phase_marker(folder: str) -> re.Pattern:
    """The strace line of a phase's marker (the Python runner's `phases` mode stats
    `<folder>/begin-<phase>` and `<folder>/end-<phase>`, paths that do not exist)."""
    return re.compile(rb'"' + re.escape(folder.encode()) + rb"/(begin|end)-([^\"/]+)\"")


def count_exec_segments(
    stream: BinaryIO, chunk: int = 1 << 22, marker: re.Pattern | None = None
) -> tuple[dict[str, Counter], int, list[str]]:
    """A `-d exec,nochain,strace` log (bytes) -> (executed blocks per guest PC by segment, the
    blocks counted and not placed, the strace lines). Without marker, the whole log is one
    segment, OUTSIDE_PHASES. With marker (phase_marker), each marked phase's blocks apart; the
    blocks outside them (the load, the warm-up, the exit: most of a counting run's log) are
    counted, not placed. Counted a chunk at a time by regular expressions (a counting run
    logs a line per block executed, millions of them: a loop over lines took twice the CPU
    time); the markers are a few lines, each one splits its chunk."""
    pcs: dict[str, Counter] = {} if marker else {OUTSIDE_PHASES: Counter()}
    unplaced, other = 0, []
    rest, current = b"\n", OUTSIDE_PHASES
    for data in chain(iter(lambda: stream.read(chunk), b""), [b"\n"]):  # ends the last line
        data = rest + data
        end = data.rfind(b"\n")
        rest, start = data[end:], 0
        for found in marker.finditer(data, 0, end) if marker else ():
            unplaced += count_segment(pcs.get(current), data, start, found.start())
            current = next_segment(current, found.group(1).decode(), found.group(2).decode())
            if current != OUTSIDE_PHASES:
                pcs.setdefault(current, Counter())
            start = found.end()
        unplaced += count_segment(pcs.get(current), data, start, end)
        other += NOT_TRACE.findall(data, 0, end)
    segments = {name: Counter({pc.decode(): n for pc, n in c.items()}) for name, c in pcs.items()}
    return segments, unplaced, [line.decode(errors="replace") for line in other]


def count_segment(blocks: Counter | None, data: bytes, start: int, end: int) -> int:
    """data[start:end]'s blocks added to blocks by guest PC; without blocks (outside the
    marked phases), counted: the number it did not place."""
    if blocks is None:
        return data.count(TRACE, start, end)
    blocks.update(TRACE_PC.findall(data, start, end))
    return 0


def next_segment(current: str, edge: str, phase: str) -> str:
    """The segment after a marker: a phase begins outside every phase and ends itself."""
    if edge == "begin" and current == OUTSIDE_PHASES:
        return phase
    if edge == "end" and current == phase:
        return OUTSIDE_PHASES
    raise ProfilerError(
        f"the phases' markers are out of order: {edge} of {phase} inside "
        f"{current or 'no phase'} (the runner's phases mode marks each phase's begin and end)"
    )


def attribute_blocks(
    blocks: Counter,
    maps: list[dict],
    local_files: dict[str, str],
    block_classes: dict[int, Counter] | None = None,
    block_words: dict[int, Counter] | None = None,
) -> list[dict]:
    """Executed blocks per guest PC -> [{dso, symbol, count}] through the files' ELF symbols;
    with block_classes (guest PC -> the block's instructions by class, instruction_mix), each
    row also says how many instructions of each class ran (`instructions`) and how many of its
    executed blocks had no logged translation (`unlogged_blocks`); with block_words (guest PC ->
    the block's instructions by encoding), how many of each encoding ran (`encodings`).

    local_files: basename -> the ELF file on this host to read symbols from (the unstripped
    build the workflow made)."""
    symbols = {name: read_symbols(path) for name, path in local_files.items()}
    counts: Counter = Counter()
    mixes: dict[tuple, Counter] = {}  # (dso, symbol) -> instructions by class
    words: dict[tuple, Counter] = {}  # (dso, symbol) -> instructions by encoding
    unlogged: Counter = Counter()  # (dso, symbol) -> executed blocks with no translation logged
    for pc_text, n in blocks.items():
        pc = int(pc_text, 16)
        place = next((m for m in maps if m["start"] <= pc < m["start"] + m["size"]), None)
        if place is None:
            key = (OUTSIDE, None)
        else:
            name = os.path.basename(place["path"])
            elf = symbols.get(name)
            address = elf.address_of_offset(pc - place["start"] + place["offset"]) if elf else None
            key = (name, elf.function_at(address) if elf and address is not None else None)
        counts[key] += n
        if block_classes is not None:
            classes = block_classes.get(pc)
            if classes is None:
                unlogged[key] += n
            mixes.setdefault(key, Counter()).update({c: k * n for c, k in (classes or {}).items()})
        if block_words is not None:
            found = block_words.get(pc) or {}
            words.setdefault(key, Counter()).update({w: k * n for w, k in found.items()})
    rows = []
    for key, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        row = {"dso": key[0], "symbol": key[1], "count": n}
        if block_classes is not None:
            row["unlogged_blocks"] = unlogged[key]
            row["instructions"] = {c: mixes[key][c] for c in CLASSES}
        if block_words is not None:
            row["encodings"] = dict(sorted(words[key].items()))
        rows.append(row)
    return rows


class LogReader:
    """Reads a QEMU log while QEMU writes it, from the file itself: a block log can be
    gigabytes, so it is counted as it grows and each part read is given back to the file
    system (a hole punched in the file), never stored whole. QEMU writes each line with its
    own write() (it flushes every log record): through a FIFO that woke this thread at every
    line, and a counting run cost a third more CPU time."""

    def __init__(self, marker: re.Pattern | None = None):
        self.dir = tempfile.mkdtemp(prefix="qemu-log-")
        self.path = str(Path(self.dir) / "log")
        Path(self.path).touch()  # opened before QEMU runs; QEMU truncates it, the same file
        self.marker = marker
        self.segments: dict[str, Counter] = {}
        self.unplaced = 0
        self.other: list[str] = []
        self.error: ProfilerError | None = None
        self.written = threading.Event()  # QEMU has ended: what the file holds is all
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "r+b", buffering=0) as fh:  # writable: its holes are punched
            try:
                self.segments, self.unplaced, self.other = count_exec_segments(
                    GrowingFile(fh, self.written), marker=self.marker
                )
            except ProfilerError as error:
                self.error = error

    def finish(self, timeout: float = 600) -> tuple[dict[str, Counter], int, str]:
        """(the blocks by segment, the blocks counted and not placed (count_exec_segments),
        the log's other lines), once QEMU has ended"""
        self.written.set()
        self.thread.join(timeout)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.error is not None:
            raise self.error
        return self.segments, self.unplaced, "\n".join(self.other)


class GrowingFile:
    """A file another process is still writing, read as a stream: a read waits for more
    until `written` is set, and gives the part it read back to the file system."""

    def __init__(self, fh, written: threading.Event, poll_s: float = 0.02):
        self.fh, self.written, self.poll_s = fh, written, poll_s
        self.offset = self.freed = 0  # bytes read; bytes given back (whole HOLE_GRAIN parts)

    def read(self, size: int) -> bytes:
        while True:
            done = self.written.is_set()  # before the read: a last write is not missed
            data = self.fh.read(size)
            if data or done:
                break
            time.sleep(self.poll_s)
        self.offset += len(data)
        whole = self.offset - self.offset % HOLE_GRAIN
        if whole > self.freed:
            punch_hole(self.fh.fileno(), self.freed, whole - self.freed)
            self.freed = whole
        return data


def punch_hole(fd: int, offset: int, length: int) -> None:
    """Free a file's bytes [offset, offset + length) on disk, its size unchanged (Linux's
    fallocate PUNCH_HOLE); where the file system cannot, the bytes stay until it is removed."""
    if FALLOCATE is not None:
        FALLOCATE(fd, FALLOC_PUNCH_HOLE_KEEP_SIZE, ctypes.c_long(offset), ctypes.c_long(length))


FALLOCATE = getattr(ctypes.CDLL(None, use_errno=True), "fallocate", None)  # the C library's


FALLOC_PUNCH_HOLE_KEEP_SIZE = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE


HOLE_GRAIN = 1 << 16  # holes punched in whole 64 KiB parts: a partial block is zeroed, not freed
