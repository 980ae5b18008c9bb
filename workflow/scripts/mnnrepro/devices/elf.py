"""The function symbols and loadable segments of an ELF file, read with the standard library.

What the QEMU attribution needs to turn an executed guest address into a function: a shared
library's functions (`.symtab` where the file keeps it, else `.dynsym` and what a stripped
library keeps for itself: devices/stripped.py) with their address ranges, and its PT_LOAD
segments (file offset -> address). ELF64 little-endian only: every
engine this project builds or runs (x86-64, arm64) is that. Kept rather than pyelftools: it
reads two tables, and the attribution job's environment (envs/bench.yaml, pushed to devices'
userlands too) would otherwise carry a dependency for them.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass
from pathlib import Path

from mnnrepro.devices.stripped import recovered_functions
from mnnrepro.errors import DataError

SHT_SYMTAB, SHT_DYNSYM = 2, 11
STT_FUNC, STT_NOTYPE = 2, 0
PT_LOAD = 1
SHF_EXECINSTR = 0x4


@dataclass(frozen=True)
class Segment:
    offset: int
    vaddr: int
    filesz: int


@dataclass(frozen=True)
class Section:
    name: str
    start: int
    end: int


@dataclass
class ElfSymbols:
    path: str
    segments: list[Segment]
    starts: list[int]  # sorted function start addresses
    ends: list[int]
    names: list[str]
    from_symtab: bool  # False: only the exported (.dynsym) functions were there
    stubs: list[Section]  # the linker's call stubs (.plt*): code no symbol names

    def address_of_offset(self, offset: int) -> int | None:
        """The link-time address of a file offset inside a loaded segment."""
        for seg in self.segments:
            if seg.offset <= offset < seg.offset + seg.filesz:
                return offset - seg.offset + seg.vaddr
        return None

    def function_at(self, address: int) -> str | None:
        """The function whose range holds address (None: between or outside functions)."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.ends[i]:
            return self.names[i]
        for stub in self.stubs:
            if stub.start <= address < stub.end:
                return f"[{stub.name}]"
        return None


def function_symbols(data: bytes, sections: list[tuple], table: tuple) -> dict[int, tuple]:
    """Start address -> (size, name) of every function in one symbol table (the largest where
    two share a start; labels and mapping symbols left out)."""
    _name, _type, _flags, _addr, offset, size, link, _info, _align, entsize = table
    str_off = sections[link][4]
    functions: dict[int, tuple[int, str]] = {}
    for j in range(size // entsize):
        st_name, st_info, _other, shndx, value, st_size = struct.unpack_from(
            "<IBBHQQ", data, offset + j * entsize
        )
        kind = st_info & 0xF
        if shndx == 0 or value == 0 or kind not in (STT_FUNC, STT_NOTYPE):
            continue
        if kind == STT_NOTYPE and st_size == 0:
            continue  # labels such as $x mapping symbols
        end = data.index(b"\0", str_off + st_name)
        name = data[str_off + st_name : end].decode("utf-8", "replace")
        if name.startswith("$"):
            continue
        if value not in functions or st_size > functions[value][0]:
            functions[value] = (st_size, name)
    return functions


def function_ends(starts: list[int], sizes: list[int], executable: list[Section]) -> list[int]:
    """Where each function ends: its start plus its size; hand-written assembly often has no
    size: it runs to the next function, within its section (`_init` does not own the call
    stubs after it)."""
    ends = []
    for i, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        section_end = next((sec.end for sec in executable if sec.start <= start < sec.end), start)
        following = starts[i + 1] if i + 1 < len(starts) else section_end
        ends.append(start + size if size else min(following, section_end))
    return ends


def read_symbols(path: str | Path) -> ElfSymbols:
    """Functions and load segments of one ELF file; DataError naming it if it is not ELF64 LE."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise DataError(str(path), "not a 64-bit little-endian ELF file", "")
    (phoff, shoff) = struct.unpack_from("<QQ", data, 0x20)
    (phentsize, phnum, shentsize, shnum, shstrndx) = struct.unpack_from("<HHHHH", data, 0x36)
    segments = []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _p, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize
        )
        if p_type == PT_LOAD:
            segments.append(Segment(p_offset, p_vaddr, p_filesz))
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
    tables = {s[1]: s for s in sections if s[1] in (SHT_SYMTAB, SHT_DYNSYM)}
    names_at = sections[shstrndx][4] if shstrndx < len(sections) else 0

    def section_name(sh: tuple) -> str:
        end = data.index(b"\0", names_at + sh[0])
        return data[names_at + sh[0] : end].decode("ascii", "replace")

    executable = sorted(
        (
            Section(section_name(sh), sh[3], sh[3] + sh[5])
            for sh in sections
            if sh[2] & SHF_EXECINSTR
        ),
        key=lambda sec: sec.start,
    )
    table = tables.get(SHT_SYMTAB) or tables.get(SHT_DYNSYM)
    functions = function_symbols(data, sections, table) if table is not None else {}
    if SHT_SYMTAB not in tables:  # stripped: what the library keeps for itself names the rest
        for start, function in recovered_functions(data, sections, section_name).items():
            if start not in functions or function[1].startswith("kai_"):
                functions[start] = function
    starts = sorted(functions)
    ends = function_ends(starts, [functions[s][0] for s in starts], executable)
    return ElfSymbols(
        str(path),
        segments,
        starts,
        ends,
        [functions[s][1] for s in starts],
        table is not None and table[1] == SHT_SYMTAB,
        [sec for sec in executable if sec.name.startswith(".plt")],
    )
