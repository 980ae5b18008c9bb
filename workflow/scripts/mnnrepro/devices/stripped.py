"""The functions of a stripped shared library (no `.symtab`: ONNX Runtime's wheels), recovered
from what the library keeps for itself, so that profiles of it resolve to functions:

* every function with unwind information: its range from its `.eh_frame` entry (FDE), found
  through `.eh_frame_hdr`'s sorted table; named `fn@<address>` (its name is gone);
* KleidiAI's micro-kernels, by name: a library that dispatches KleidiAI's kernels through
  tables of `{name, get_m_step, ..., run_matmul}` (ONNX Runtime's MLAS) keeps each kernel's
  name string and, as relocations (R_*_RELATIVE), the addresses of its name and functions.
  The slots after a name up to the next unrelocated slot are its interface's functions, the
  last one `run_matmul`: named `kai_run_<kernel>`. Its hand-written assembly (which has no
  unwind entry) is each direct call target (aarch64 BL) from it that has none and that no
  other kernel's run function calls (the helpers they share, such as reading the streaming
  vector length, are called from many): a body, or a kernel's second routine or its small
  converter, each named `kai_kernel_<kernel>` (KleidiAI's own name for the body) up to where
  its code ends (code_end: after the first return or jump out that no branch before it
  reaches past), not up to the next known function: code after it that nothing names stays
  unnamed.

Only little-endian ELF64 with the usual encodings (FDE addresses pc-relative 4-byte, the table
data-relative 4-byte) is read; anything else yields what could be read, never a guess."""

from __future__ import annotations

import bisect
import re
import struct
from collections import Counter

R_RELATIVE = {1027, 8}  # R_AARCH64_RELATIVE, R_X86_64_RELATIVE
SHT_RELA = 4
KERNEL_NAME = re.compile(rb"kai_run_[a-z0-9_]+\x00")
BL_MASK, BL_OPCODE = 0xFC000000, 0x94000000  # aarch64 BL imm26 (B's mask too)
# aarch64 branches within a function, (mask, opcode, offset's lowest bit, its width in bits):
# B imm26, B.cond imm19, CB(N)Z imm19, TB(N)Z imm14; RET Xn; BR Xn (an indirect jump out)
B_OPCODE = 0x14000000
BRANCHES = (
    (BL_MASK, B_OPCODE, 0, 26),
    (0xFF000010, 0x54000000, 5, 19),
    (0x7E000000, 0x34000000, 5, 19),
    (0x7E000000, 0x36000000, 5, 14),
)
RET_MASK, RET_OPCODE, BR_OPCODE = 0xFFFFFC1F, 0xD65F0000, 0xD61F0000
TABLE_ENCODING = 0x3B  # DW_EH_PE_datarel | DW_EH_PE_sdata4


def recovered_functions(data: bytes, sections: list[tuple], section_name) -> dict[int, tuple]:
    """Start address -> (size, name) of the functions recoverable from a stripped library
    (sections: its section headers as elf.read_symbols unpacks them; section_name(header))."""
    by_name = {section_name(s): s for s in sections}
    functions = unwound_functions(data, by_name)
    # an assembly body's size is 0: it runs to the next function (elf.read_symbols)
    functions.update(kernel_functions(data, sections, by_name, functions))
    return functions


def section_bytes(data: bytes, header: tuple) -> tuple[int, bytes]:
    """(its address, its bytes) of one section header."""
    return header[3], data[header[4] : header[4] + header[5]]


def unwound_functions(data: bytes, by_name: dict) -> dict[int, tuple]:
    """Every function `.eh_frame_hdr`'s table lists, with its FDE's range."""
    hdr, frames = by_name.get(".eh_frame_hdr"), by_name.get(".eh_frame")
    if hdr is None or frames is None:
        return {}
    address, table = section_bytes(data, hdr)
    version, _ptr_enc, count_enc, table_enc = table[:4]
    if version != 1 or table_enc != TABLE_ENCODING or count_enc != 0x03:
        return {}
    (count,) = struct.unpack_from("<I", table, 8)
    frames_at, frame_bytes = section_bytes(data, frames)
    functions = {}
    for i in range(count):
        loc, fde = struct.unpack_from("<ii", table, 12 + 8 * i)
        start, fde_at = address + loc, address + fde - frames_at
        if not 0 <= fde_at < len(frame_bytes) - 16:
            continue
        (begin,) = struct.unpack_from("<i", frame_bytes, fde_at + 8)
        (size,) = struct.unpack_from("<i", frame_bytes, fde_at + 12)
        if frames_at + fde_at + 8 + begin == start and size > 0:  # pc-relative, as expected
            functions[start] = (size, f"fn@{start:x}")
    return functions


def relative_relocations(data: bytes, sections: list[tuple]) -> dict[int, int]:
    """Slot address -> the address it is relocated to, of every R_*_RELATIVE relocation."""
    slots = {}
    for header in sections:
        if header[1] != SHT_RELA:
            continue
        _, body = section_bytes(data, header)
        for offset, info, addend in struct.iter_unpack("<QQq", body[: len(body) // 24 * 24]):
            if info & 0xFFFFFFFF in R_RELATIVE:
                slots[offset] = addend
    return slots


def kernel_functions(data: bytes, sections, by_name: dict, known: dict) -> dict[int, tuple]:
    """KleidiAI's `kai_run_*` functions named from the kernel tables, and each one's assembly
    body (`kai_kernel_*`); {} where the library holds no such table."""
    rodata = by_name.get(".rodata")
    if rodata is None:
        return {}
    at, body = section_bytes(data, rodata)
    names = {at + m.start(): m.group()[:-1].decode() for m in KERNEL_NAME.finditer(body)}
    if not names:
        return {}
    slots = relative_relocations(data, sections)
    name_slots = sorted((slot, names[target]) for slot, target in slots.items() if target in names)
    runs: dict[int, str] = {}
    for slot, name in name_slots:
        interface = []
        cursor = slot + 8
        while cursor in slots and slots[cursor] not in names:
            interface.append(slots[cursor])
            cursor += 8
        if interface and interface[-1] in known:  # else not a table of this shape
            runs[interface[-1]] = name
    calls = {run: unwound_callees(data, by_name, run, known[run][0], known) for run in runs}
    shared = Counter(target for targets in calls.values() for target in set(targets))
    found: dict[int, tuple] = {}
    for run, name in runs.items():
        found[run] = (known[run][0], name)
        own = {t: span for t, span in calls[run].items() if shared[t] == 1}  # helpers are shared
        for body, span in own.items():
            size = code_end(data, by_name[".text"], body, body + span) - body
            found[body] = (size, "kai_kernel_" + name.removeprefix("kai_run_"))
    return found


def branch_target(word: int, address: int) -> int | None:
    """Where an aarch64 direct branch (not a call) at address goes (None: not one)."""
    for mask, opcode, low, width in BRANCHES:
        if word & mask == opcode:
            return address + branch_offset(word, low, width)
    return None


def branch_offset(word: int, low: int, width: int) -> int:
    """The byte offset a branch encodes: its signed word offset, bits [low, low + width)."""
    imm = (word >> low) & ((1 << width) - 1)
    return (imm - (1 << width) if imm >> (width - 1) else imm) << 2


def code_end(data: bytes, text: tuple, start: int, limit: int) -> int:
    """Where the assembly function at start ends, read forward up to limit (the next known
    function): after the first return, indirect jump or unconditional branch that no branch
    before it reaches past; limit where none does (0 size: read_symbols runs it there)."""
    text_at, code = section_bytes(data, text)
    furthest = start
    for address in range(start, min(limit, text_at + len(code)), 4):
        (word,) = struct.unpack_from("<I", code, address - text_at)
        target = branch_target(word, address)
        if target is not None and target > furthest:
            furthest = target
        leaves = word & RET_MASK in (RET_OPCODE, BR_OPCODE) or word & BL_MASK == B_OPCODE
        if leaves and address >= furthest:
            return address + 4
    return start  # size 0


def unwound_callees(data: bytes, by_name: dict, start: int, size: int, known: dict) -> dict:
    """The direct call targets (aarch64 BL) from the function at [start, start + size) that
    have no unwind entry, each with how far it reaches before the next known function."""
    text = by_name.get(".text")
    if text is None:
        return {}
    text_at, code = section_bytes(data, text)
    starts = sorted(known)
    targets = {}
    for address in range(start, start + size, 4):
        offset = address - text_at
        if not 0 <= offset <= len(code) - 4:
            return {}
        (word,) = struct.unpack_from("<I", code, offset)
        if word & BL_MASK != BL_OPCODE:
            continue
        target = address + branch_offset(word, 0, 26)
        if target not in known:
            i = bisect.bisect_right(starts, target)
            targets[target] = (starts[i] if i < len(starts) else text_at + len(code)) - target
    return targets
