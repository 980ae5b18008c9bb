"""What a QEMU counting run executed, by instruction class: every translated block's
instructions as QEMU logs them once (`-d in_asm`: address, encoding, mnemonic, operands), each
put in a class, times the block's executions (`-d exec,nochain`), summed per function
(qemu_blocks.attribute_blocks). The classes are the ones that decide a kernel's time on an SME2
core: SME outer products, the rest of SME (ZA moves, loads and stores; SME2's multi-vector and
lookup-table instructions), streaming-mode switches, integer and bf16 dot products and matrix
multiplies (NEON or SVE), other vector instructions and their loads and stores, scalar loads
and stores, branches, other scalar instructions.

QEMU 11's disassembler prints SME2's multi-vector instructions (LUTI4, LD1B with a
predicate-as-counter, SDOT into ZA) as `.byte`; their encoding's top-level group (A64: bit 31
set, bits 28-25 clear) still places them in SME, which is what the class needs.

The same blocks also give each function's instructions by encoding (block_encodings), which a
per-instruction price list reads in the disassembler it was made with (LLVM's)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

CLASSES = (
    "sme_outer_product",  # SMOPA, FMOPA, ...: one instruction, a VL x VL tile of products
    "sme_other",  # ZA loads, stores and moves; SME2 multi-vector and LUT instructions
    "sme_mode",  # SMSTART / SMSTOP: entering and leaving streaming mode
    "dot_matmul",  # SDOT, UDOT, USDOT, SMMLA, BFMMLA, ... on NEON or SVE registers
    "vector_load_store",
    "vector_other",
    "load_store",
    "branch",
    "scalar_other",
)
IN_ASM = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{8})\s+(\S+)\s*(.*)$")
OUTER_PRODUCT = re.compile(r"^(s|u|su|us|f|bf|b)mop[as]$")
DOT_MATMUL = re.compile(r"^(s|u|us|su|bf|f)(dot|mmla)$")
BRANCH = re.compile(r"^(b|bl|br|blr|ret|cbz|cbnz|tbz|tbnz|b\.\w+|bc\.\w+|eret|retaa|retab)$")
LOAD_STORE = re.compile(r"^(ld|st|prf)\w*$")
VECTOR_REGISTER = re.compile(r"\b[vzpqd]\d+\b|\bz\d+\.|\bza\w*|\{")


def is_sme_encoding(word: int) -> bool:
    """The A64 top-level SME group: bit 31 set, bits 28-25 clear."""
    return bool(word >> 31) and (word >> 25) & 0xF == 0


def instruction_class(word: int, mnemonic: str, operands: str) -> str:
    """The class (CLASSES) of one instruction as QEMU's `-d in_asm` prints it."""
    if OUTER_PRODUCT.match(mnemonic):
        return "sme_outer_product"
    if mnemonic in ("smstart", "smstop"):
        return "sme_mode"
    if is_sme_encoding(word) or "za" in operands or "zt0" in operands:
        return "sme_other"
    if DOT_MATMUL.match(mnemonic):
        return "dot_matmul"
    vector = bool(VECTOR_REGISTER.search(operands))
    if LOAD_STORE.match(mnemonic):
        return "vector_load_store" if vector else "load_store"
    if BRANCH.match(mnemonic):
        return "branch"
    return "vector_other" if vector else "scalar_other"


def block_instructions(
    lines: Iterable[str], wanted: set[int] | None = None
) -> dict[int, list[tuple[int, str]]]:
    """QEMU `-d in_asm` blocks among a log's other lines: the guest address of a block's first
    instruction -> its instructions, each as (encoding, class) (with wanted, only the blocks
    starting there: a counting run translates far more blocks than its phases execute). A
    block translated again (QEMU flushes and retranslates) holds the same instructions: the
    last translation is kept."""
    blocks: dict[int, list[tuple[int, str]]] = {}
    start, instructions = None, []
    for line in lines:
        found = IN_ASM.match(line)
        if found is None:
            if start is not None and instructions is not None:
                blocks[start] = instructions
            start, instructions = None, []
            continue
        address, word, mnemonic, operands = found.groups()
        if start is None:
            start = int(address, 16)
            instructions = [] if wanted is None or start in wanted else None
        if instructions is not None:
            encoding = int(word, 16)
            instructions.append((encoding, instruction_class(encoding, mnemonic, operands)))
    if start is not None and instructions is not None:
        blocks[start] = instructions
    return blocks


def translated_blocks(lines: Iterable[str], wanted: set[int] | None = None) -> dict[int, Counter]:
    """block_instructions' blocks, each as its instructions by class."""
    return translated_classes(block_instructions(lines, wanted))


def translated_classes(blocks: dict[int, list[tuple[int, str]]]) -> dict[int, Counter]:
    """block_instructions' blocks, each as its instructions by class."""
    return {start: Counter(c for _, c in instructions) for start, instructions in blocks.items()}


def block_encodings(blocks: dict[int, list[tuple[int, str]]]) -> dict[int, Counter]:
    """block_instructions' blocks, each as its instructions by encoding (8 hex digits: what a
    per-instruction price is looked up by, analysis/instruction_prices.py)."""
    return {
        start: Counter(f"{word:08x}" for word, _ in instructions)
        for start, instructions in blocks.items()
    }


# x86-64, as objdump prints it (AT&T syntax): the same classes, for counting this host's own
# builds (devices/callgrind.py). Integer dot products (VNNI, the pair of multiply-adds AVX2's
# int8 GEMMs use, AVX-512 BF16) are dot_matmul; a vector register or AVX's `v` prefix makes an
# instruction a vector one; a move, broadcast or gather with a memory operand is a load or store.
X86_PREFIXES = frozenset(
    (
        "lock",
        "rep",
        "repz",
        "repnz",
        "repe",
        "repne",
        "notrack",
        "bnd",
        "data16",
        "cs",
        "ds",
        "es",
        "fs",
        "gs",
        "ss",
        "addr32",
    )
)
X86_DOT_MATMUL = re.compile(r"^v?(pmaddubsw|pmaddwd|pdpbusds?|pdpwssds?|dpbf16ps|dpbusds?)$")
X86_BRANCH = re.compile(r"^(j[a-z]+|call[qw]?|ret[qw]?|loop\w*)$")
X86_MOVE = re.compile(
    r"^(v?mov\w*|v?p?broadcast\w*|v?p?gather\w*|v?pinsr\w|v?pextr\w|v?lddqu|v?maskmov\w*|"
    r"stos\w?|lods\w?|v?insert\w+|v?extract\w+)$"
)
X86_VECTOR_REGISTER = re.compile(r"%[xyz]mm\d+|%k[0-7]\b|%st\b")


def x86_instruction_class(mnemonic: str, operands: str) -> str:
    """The class (CLASSES) of one x86-64 instruction as objdump prints it (prefixes dropped:
    `rep stos` is a store, `notrack jmp` a branch)."""
    words = mnemonic.split()
    while len(words) > 1 and words[0] in X86_PREFIXES:
        words.pop(0)
    name = words[0] if words else ""
    if X86_DOT_MATMUL.match(name):
        return "dot_matmul"
    if X86_BRANCH.match(name):
        return "branch"
    vector = bool(X86_VECTOR_REGISTER.search(operands)) or (
        name.startswith("v") and name not in ("verr", "verw")
    )
    memory = "(" in operands and not name.startswith("lea") and not name.startswith("nop")
    if X86_MOVE.match(name) and memory:
        return "vector_load_store" if vector else "load_store"
    if name in ("push", "pushq", "pop", "popq"):  # the stack
        return "load_store"
    return "vector_other" if vector else "scalar_other"
