"""Code generation for ops that build blocks or move elements between
registers: arange, splat, broadcast, expand_dims, reshape, permute, join,
split, cat and convert_layout.

A move is a register permutation when every thread already holds the
elements it needs: the destination's lane and warp bases are the source's
(seen through the op's coordinate map) and each destination register's
coordinates are some source register's. Otherwise the elements go through
shared memory: every thread writes its registers at the elements' row-major
offsets, a barrier, every thread reads the offsets it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from tritone.ir.core import Operation, Value

from ...ir.layouts import Coord, LinearLayout, SwizzledSharedLayout
from .codegen_base import (
    CodegenError,
    Emitter,
    bits_expr,
    emits,
    linear_index_expr,
    needs_scratch,
    register_index,
    row_major_strides,
)
from .codegen_types import ctype

CoordMap = Callable[[Coord], Coord]


def register_sources(src: LinearLayout, dst: LinearLayout, to_src: CoordMap) -> list[int] | None:
    """For each destination register, the source register of the same thread
    holding its element (coordinates mapped by the linear `to_src`), or None
    when some thread lacks an element it needs."""
    if len(src.lanes) != len(dst.lanes) or len(src.warps) != len(dst.warps):
        return None
    for dst_basis, src_basis in zip(dst.lanes + dst.warps, src.lanes + src.warps):
        if to_src(dst_basis) != src_basis:
            return None
    where = first_registers(src)
    sources = []
    for coords in dst.mapped_register_coords(to_src):
        found = where.get(coords)
        if found is None:
            return None
        sources.append(found)
    return sources


def first_registers(linear: LinearLayout) -> dict[Coord, int]:
    """The first register of `linear` holding each element, by its coordinates."""
    where: dict[Coord, int] = {}
    for reg in range(linear.num_registers):
        where.setdefault(linear.register_coords(reg), reg)
    return where


def _unique_registers(linear: LinearLayout) -> list[int]:
    """Registers holding distinct elements (duplicates from zero bases skipped)."""
    seen: set[Coord] = set()
    regs = []
    for reg in range(linear.num_registers):
        c = linear.register_coords(reg)
        if c not in seen:
            seen.add(c)
            regs.append(reg)
    return regs


# Copies of at least this many registers are written as one unrolled loop wherever their
# map is linear (`register_index`), smaller ones only for the identity. Less C++ for NVRTC
# to parse and unroll (FlexAttention's bf16 template: 217 KB to 169 KB, NVRTC 5% faster, the
# same SASS); written out below it, because a matmul whose K loop held 4- and 8-register
# broadcasts as loops lost NVVM's unrolling of that K loop by 3 (496 to 288 SASS instructions
# on sm_80), which no copy of 16 or more registers did in the snapshot kernels.
COPY_LOOP_MIN_REGISTERS = 16


def copy_registers(em: Emitter, src: Value, dst_name: str, sources: list[int]) -> None:
    """`dst[r] = src[sources[r]]`, as one unrolled loop when the map is the identity, or
    for `COPY_LOOP_MIN_REGISTERS` registers or more, linear over the register index's bits
    (`register_index`: a broadcast's repeats, a permutation of them)."""
    if len(sources) >= COPY_LOOP_MIN_REGISTERS:
        index = register_index(sources)
    else:
        index = "i" if sources == list(range(len(sources))) else None
    if index is not None:
        em.for_registers(len(sources), f"{dst_name}[i] = {em.name(src)}[{index}];")
        return
    for reg, source in enumerate(sources):
        em.line(f"{dst_name}[{reg}] = {em.reg(src, source)};")


# -- moves through shared memory ---------------------------------------------------------

def _element_bytes(value: Value) -> int:
    return value.type.scalar.itemsize


def _numel(value: Value) -> int:
    n = 1
    for s in (value.type.shape if value.type.is_block() else ()):
        n *= s
    return n


def _offsets(em: Emitter, linear: LinearLayout, reg: int, strides: list[int], offset: int) -> str:
    coords = [em.coord(linear, d, reg) for d in range(linear.rank)]
    return linear_index_expr(coords, strides, offset)


def _at(reg_of: Callable[[int], int] | None, reg: int) -> int:
    return reg if reg_of is None else reg_of(reg)


def _write_block(em: Emitter, linear: LinearLayout, name: str, strides: list[int], offset: int, eb: int,
                 row_bits: int, reg_of: Callable[[int], int] | None = None, max_width: int = 16) -> None:
    """A thread's registers of a block in `linear` (the array `name`; register r of the
    layout is `name[reg_of(r)]`) into `tt_buf` at `offset + sum(coord * stride)`,
    placed by `_swizzled`: by `stmatrix` where it fits, else in runs of up to
    `max_width` side-by-side registers, one access each."""
    if _by_stmatrix(em, linear, strides, offset, eb):
        def index(coords: list[str]) -> str:
            return _swizzled(linear_index_expr(coords, strides), eb, row_bits)
        write_by_stmatrix(em, linear, name, index, reg_of)
        return
    width = min(_vector_width(linear, strides, offset, eb, least_bytes=2), max_width)
    for reg in _unique_registers(linear):
        if reg % width == 0:
            index = _swizzled(_offsets(em, linear, reg, strides, offset), eb, row_bits)
            _copy(em, f"tt_buf[{index}]", f"{name}[{_at(reg_of, reg)}]", width * eb, width == 1)


def _read_block(em: Emitter, linear: LinearLayout, name: str, strides: list[int], offset: int, eb: int,
                row_bits: int, reg_of: Callable[[int], int] | None = None, max_width: int = 16) -> None:
    """`_write_block`'s reverse: every register of the block from `tt_buf`."""
    width = min(_vector_width(linear, strides, offset, eb, least_bytes=2), max_width)
    for reg in range(0, linear.num_registers, width):
        index = _swizzled(_offsets(em, linear, reg, strides, offset), eb, row_bits)
        _copy(em, f"{name}[{_at(reg_of, reg)}]", f"tt_buf[{index}]", width * eb, width == 1)


def exchange(em: Emitter, writes: list[tuple[Value, list[int], int]],
             reads: list[tuple[Value, list[int], int]], nbytes: int) -> None:
    """Move elements through shared scratch memory: each written value's
    elements go to `offset + sum(coord * stride)`, then each read value (a
    result, defined here) takes its elements from there. Runs of a thread's
    registers that sit side by side there move as one access of up to 16 bytes.
    Elements are placed by `_swizzled` (the same `nbytes`, fewer bank conflicts)."""
    elem = ctype(writes[0][0].type)
    eb = _element_bytes(writes[0][0])
    row_bits = _swizzle_row_bits(writes[0][1], eb)
    names = [em.define(value) for value, _, _ in reads]
    # a barrier first only where earlier shared-memory users may still read these bytes
    em.shared_access(em.scratch_base, em.scratch_base + nbytes, True)
    em.open()
    em.line(f"{elem}* tt_buf = {em.scratch(elem, 0, nbytes)};")
    paired = _paired_byte_chunks(em, writes, reads)
    for value, strides, offset in writes:
        if not value.type.is_block():
            em.line(f"tt_buf[{_swizzled(str(offset), eb, row_bits)}] = {em.name(value)};")
            continue
        if paired is not None:
            def index(coords: list[str], strides=strides) -> str:
                return _swizzled(linear_index_expr(coords, strides), eb, row_bits)
            write_bytes_by_stmatrix(em, em.linear(value), em.name(value), index, paired)
            continue
        _write_block(em, em.linear(value), em.name(value), strides, offset, eb, row_bits)
    em.barrier()
    for (value, strides, offset), name in zip(reads, names):
        if not value.type.is_block():
            em.line(f"{name} = tt_buf[{_swizzled(str(offset), eb, row_bits)}];")
            continue
        if paired is not None:
            _read_paired_chunks(em, em.linear(value), name, strides, eb, row_bits)
            continue
        _read_block(em, em.linear(value), name, strides, offset, eb, row_bits)
    em.close()


def _by_stmatrix(em: Emitter, linear: LinearLayout, strides: list[int], offset: int, eb: int) -> bool:
    """Whether `exchange` writes a block in `linear` (an mma or wgmma result of
    16-bit elements, say) with `stmatrix`, 16 bytes a lane, where the elements would
    otherwise go 4 bytes at a time: on sm_90+, into a row-major block."""
    return (em.target >= 90 and offset == 0 and list(strides) == row_major_strides(tuple(linear.shape))
            and _stmatrix_block(linear, eb))


def _stmatrix_block(linear: LinearLayout, eb: int) -> bool:
    """Whether a row-major 2-D block in `linear` fits `stmatrix` (`stmatrix_fits`)."""
    return linear.rank == 2 and stmatrix_fits(linear, eb, linear.shape[1])


# -- a conversion in pieces -------------------------------------------------------------
# A layout conversion through shared memory needs the whole block there at once, unless a
# coordinate bit sits in a register bit of both layouts (and nowhere else in either): then
# the elements with that bit 0 can move first and those with it 1 after them, through half
# the bytes (two more barriers). Upstream always sizes a conversion's scratch so (its "reps");
# here only a conversion of more than this many bytes is cut, while its pieces would be: a
# 128x256 fp16 matmul tile (64 KB) moves in two 32 KB pieces, which leaves a persistent
# kernel's 4-stage pipeline (192 KB) room to copy the next tile's stages during the epilogue.
PIECE_BYTES = 32768


@dataclass(frozen=True)
class _Split:
    """Coordinate bit `bit` of dimension `dim`, register bit `src_reg` of the source and
    `dst_reg` of the destination."""
    dim: int
    bit: int
    src_reg: int
    dst_reg: int


def _unit_bit(basis: Coord) -> tuple[int, int] | None:
    """(dim, bit) where `basis` is one power of two along one dimension."""
    nonzero = [(d, c) for d, c in enumerate(basis) if c]
    if len(nonzero) != 1 or nonzero[0][1] & (nonzero[0][1] - 1):
        return None
    return nonzero[0][0], nonzero[0][1].bit_length() - 1


def _conversion_splits(src: LinearLayout, dst: LinearLayout, eb: int) -> list[_Split]:
    """The coordinate bits a conversion from `src` to `dst` (row-major scratch) moves
    piece by piece (see `PIECE_BYTES`): none where the whole fits. A register bit that
    makes a vector access (or pairs the elements of an `stmatrix` row) is kept, and a
    source `stmatrix` could write (on any target: the scratch's size does not depend
    on it) stays one in each piece."""
    nbytes = src.numel * eb
    strides = row_major_strides(tuple(src.shape))
    src_keep = _vector_width(src, strides, 0, eb, least_bytes=2).bit_length() - 1
    stmatrix = _stmatrix_block(src, eb)
    if stmatrix:
        src_keep = max(src_keep, 1)
    dst_keep = _vector_width(dst, strides, 0, eb, least_bytes=2).bit_length() - 1
    splits: list[_Split] = []
    for i, basis in enumerate(src.registers):
        if nbytes >> len(splits) <= PIECE_BYTES:
            break
        unit = _unit_bit(basis)
        if i < src_keep or unit is None or basis not in dst.registers:
            continue
        j = dst.registers.index(basis)
        dim, bit = unit
        others = [b for k, b in enumerate(src.registers) if k != i] + [
            b for k, b in enumerate(dst.registers) if k != j] + list(src.lanes + src.warps + dst.lanes + dst.warps)
        if j < dst_keep or any(b[dim] >> bit & 1 for b in others):
            continue
        candidate = splits + [_Split(dim, bit, i, j)]
        if stmatrix and not _stmatrix_block(_piece_layout(src, candidate, "src"), eb):
            continue
        splits = candidate
    return splits


def _piece_shape(shape: tuple[int, ...], splits: list[_Split]) -> tuple[int, ...]:
    out = list(shape)
    for split in splits:
        out[split.dim] //= 2
    return tuple(out)


def _without(coord: Coord, splits: list[_Split]) -> Coord:
    """`coord` with the split bits taken out (the bits above each moved down one)."""
    out = list(coord)
    for split in sorted(splits, key=lambda s: -s.bit):
        c = out[split.dim]
        low = c & ((1 << split.bit) - 1)
        out[split.dim] = (c >> (split.bit + 1) << split.bit) | low
    return tuple(out)


def _piece_layout(linear: LinearLayout, splits: list[_Split], side: str) -> LinearLayout:
    """`linear` restricted to one piece: the split register bits gone, every basis
    without the split coordinate bits."""
    gone = {s.src_reg if side == "src" else s.dst_reg for s in splits}
    return LinearLayout(_piece_shape(tuple(linear.shape), splits),
                        tuple(_without(b, splits) for k, b in enumerate(linear.registers) if k not in gone),
                        tuple(_without(b, splits) for b in linear.lanes),
                        tuple(_without(b, splits) for b in linear.warps))


def _register_of(bits: list[int], piece: int) -> Callable[[int], int]:
    """Register r of a piece's layout as a register of the whole: the piece's number's
    bits put back at register bits `bits` (in the order of the splits)."""
    placed = sorted(zip(bits, range(len(bits))))

    def whole(reg: int) -> int:
        for position, k in placed:
            low = reg & ((1 << position) - 1)
            reg = ((reg >> position) << (position + 1)) | ((piece >> k & 1) << position) | low
        return reg

    return whole


def _max_run(bits: list[int]) -> int:
    return 1 << min(bits) if bits else 16


def _exchange_in_pieces(em: Emitter, op: Operation, splits: list[_Split]) -> None:
    """`exchange` of a conversion one piece after another (`_conversion_splits`)."""
    src, dst = op.operands[0], op.results[0]
    eb = _element_bytes(src)
    elem = ctype(src.type)
    shape = _piece_shape(tuple(src.type.shape), splits)
    strides = row_major_strides(shape)
    row_bits = _swizzle_row_bits(strides, eb)
    nbytes = math.prod(shape) * eb
    src_piece, dst_piece = _piece_layout(em.linear(src), splits, "src"), _piece_layout(em.linear(dst), splits, "dst")
    src_bits, dst_bits = [s.src_reg for s in splits], [s.dst_reg for s in splits]
    name = em.define(dst)
    em.shared_access(em.scratch_base, em.scratch_base + nbytes, True)
    em.open()
    em.line(f"{elem}* tt_buf = {em.scratch(elem, 0, nbytes)};")
    for piece in range(1 << len(splits)):
        if piece:
            em.barrier()  # the last piece is read before this one takes its bytes
        _write_block(em, src_piece, em.name(src), strides, 0, eb, row_bits, _register_of(src_bits, piece),
                     _max_run(src_bits))
        em.barrier()
        _read_block(em, dst_piece, name, strides, 0, eb, row_bits, _register_of(dst_bits, piece),
                    _max_run(dst_bits))
    em.close()


# the 8x8 matrix of 16-bit elements `stmatrix` stores from a warp (PTX_FACTS: the fragment
# `ldmatrix` loads): register bit 0 the next column, lane bits 0-1 columns 2 and 4, lane
# bits 2-4 rows 1, 2 and 4
_STMATRIX_REGISTER = (0, 1)
_STMATRIX_LANES = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))


def stmatrix_fits(linear, eb: int, contiguous: int) -> bool:
    """Whether a 2-D block of 16-bit elements in `linear` (an mma or wgmma result,
    say) is written to shared memory by `stmatrix.x4` (sm_90+): each thread's
    register pairs and its lanes form 8x8 matrices, four per instruction
    (register bits 1 and 2), no two lanes or registers holding the same element,
    and a matrix row (16 bytes) contiguous there (`contiguous`: how many columns
    of a row are side by side)."""
    if eb != 2 or linear.rank != 2 or len(linear.registers) < 3 or contiguous < 8:
        return False
    if tuple(linear.registers[0]) != _STMATRIX_REGISTER or tuple(map(tuple, linear.lanes)) != _STMATRIX_LANES:
        return False
    return all(any(basis) for basis in linear.registers)


SHARED_ADDRESS = r"""__device__ __forceinline__ unsigned tt_shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}"""


def _stmatrix_rows(em: Emitter, linear, m0: int, m1: int) -> tuple[str, str]:
    """The `stmatrix` helper declared, and (row, column) variables of the row whose
    address this lane gives an `stmatrix.x4`: row `lane & 7` of matrix `lane >> 3`, the
    matrix's bits register bits `m0` and `m1` of `linear`, as the thread's warp places it."""
    em.declare_once(SHARED_ADDRESS)
    em.declare_once(
        "__device__ __forceinline__ void tt_stmatrix_x4(unsigned address, unsigned a, unsigned b, unsigned c, "
        "unsigned d) {\n"
        '  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" '
        ':: "r"(address), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");\n}')
    rows, columns = em.fresh("tt_sm_row"), em.fresh("tt_sm_col")
    for name, dim, own in ((rows, 0, "(tt_lane & 7)"), (columns, 1, "0")):
        parts = [bits_expr([b[dim] for b in linear.warps], "tt_warp"),
                 bits_expr([linear.registers[m0][dim], linear.registers[m1][dim]], "(tt_lane >> 3)"), own]
        em.line(f"const int {name} = {' ^ '.join(f'({p})' for p in parts if p != '0') or '0'};")
    return rows, columns


def write_by_stmatrix(em: Emitter, linear, values: str, index,
                      reg_of: Callable[[int], int] | None = None) -> None:
    """`values` into shared `tt_buf`, the element at coordinates `coords` (C
    expressions) at `tt_buf[index(coords)]`, four 8x8 matrices per `stmatrix`:
    lanes 8m..8m+7 give the addresses of matrix m's rows (m: register bits 1, 2).
    Register r of `linear` is `values[reg_of(r)]` (r itself without `reg_of`), whose
    register bit 0 must stay bit 0."""
    rows, columns = _stmatrix_rows(em, linear, 1, 2)
    for first in range(0, linear.num_registers, 8):
        origin = linear.register_coords(first)
        coords = [f"({rows} ^ {origin[0]})", f"({columns} ^ {origin[1]})"]
        em.open()
        em.line("unsigned tt_m[4];")
        words = [_at(reg_of, first + 2 * m) for m in range(4)]
        if any(_at(reg_of, first + 2 * m + 1) != words[m] + 1 for m in range(4)):
            raise CodegenError("stmatrix needs each register pair side by side")
        if words == [words[0] + 2 * m for m in range(4)]:
            em.line(f"memcpy(tt_m, &{values}[{words[0]}], 16);")
        else:
            for m, word in enumerate(words):
                em.line(f"memcpy(&tt_m[{m}], &{values}[{word}], 4);")
        em.line(f"tt_stmatrix_x4(tt_shared_address(&tt_buf[{index(coords)}]), "
                "tt_m[0], tt_m[1], tt_m[2], tt_m[3]);")
        em.close()


# A block of 1-byte elements (fp8) in an mma or wgmma result's layout holds, per thread
# and row, two bytes side by side and the same two 8 columns on: in a 16-byte chunk of a
# row (columns 16k to 16k + 15), lane c (its lane bits 0-1) has columns 2c, 2c + 1, 2c + 8
# and 2c + 9. Written as one 4-byte word at byte 4c of the chunk (the chunk's columns in
# the order 0 1 8 9 2 3 10 11 4 5 12 13 6 7 14 15, `_PAIRED_CHUNK`), the words of eight rows
# are an `stmatrix` 8x8 matrix of 16-bit elements: 16 bytes a lane in 4 matrices per
# instruction, where the elements went out two bytes at a time (64 stores a thread for a
# 128x256 tile over 8 warps, against 8). A reader takes whole chunks and puts the
# columns back in order in registers (byte permutes), as upstream Triton's conversions
# of such blocks do with `ldmatrix`.
_PAIRED_CHUNK = (0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15)


def _byte_stmatrix_bits(linear: LinearLayout, eb: int) -> tuple[int, int, int] | None:
    """For a 2-D block of 1-byte elements in `linear` written as `_PAIRED_CHUNK`s by
    `stmatrix`: the register bits of (the word's second pair, 8 columns on; matrix bit
    0; matrix bit 1). None where it does not fit: two bytes side by side in a register
    pair, the lanes as in an 8x8 matrix of 16-bit elements, a register bit 8 columns
    on, two more register bits that step whole chunks or rows, no element twice."""
    if eb != 1 or linear.rank != 2 or linear.shape[1] < 16 or len(linear.registers) < 4:
        return None
    registers = [tuple(basis) for basis in linear.registers]
    if registers[0] != (0, 1) or tuple(map(tuple, linear.lanes)) != _STMATRIX_LANES or (0, 8) not in registers:
        return None
    if not all(any(basis) for basis in registers):
        return None
    half = registers.index((0, 8))
    matrices = [k for k in range(1, len(registers)) if k != half][:2]
    if any(registers[k][1] % 16 for k in matrices) or any(basis[1] % 16 for basis in linear.warps):
        return None
    return half, matrices[0], matrices[1]


def _paired_byte_chunks(em: Emitter, writes, reads) -> tuple[int, int, int] | None:
    """`_byte_stmatrix_bits` where `exchange` writes one block of 1-byte elements by
    `stmatrix` as `_PAIRED_CHUNK`s (sm_90+, row-major, no offset) and every read takes
    whole 16-byte chunks of it; None otherwise."""
    if em.target < 90 or len(writes) != 1 or not writes[0][0].type.is_block():
        return None
    value, strides, offset = writes[0]
    linear = em.linear(value)
    if offset or list(strides) != row_major_strides(tuple(linear.shape)):
        return None
    bits = _byte_stmatrix_bits(linear, _element_bytes(value))
    if bits is None:
        return None
    for read, read_strides, read_offset in reads:
        if (not read.type.is_block() or read_offset or list(read_strides) != list(strides)
                or _vector_width(em.linear(read), read_strides, 0, 1) != 16):
            return None
    return bits


def write_bytes_by_stmatrix(em: Emitter, linear, values: str, index, bits: tuple[int, int, int]) -> None:
    """`values`, 1-byte elements in `linear`, into shared `tt_buf` as `_PAIRED_CHUNK`s
    (`_byte_stmatrix_bits`' `bits`), the chunk of coordinates `coords` (C expressions,
    its first column) at `tt_buf[index(coords)]`: four 8x8 matrices of 16-bit elements
    per `stmatrix`, lanes 8m..8m+7 giving the addresses of matrix m's rows."""
    half, m0, m1 = bits
    rows, columns = _stmatrix_rows(em, linear, m0, m1)
    grouped = (1 << 0) | (1 << half) | (1 << m0) | (1 << m1)
    for first in range(linear.num_registers):
        if first & grouped:
            continue
        origin = linear.register_coords(first)
        coords = [f"({rows} ^ {origin[0]})", f"({columns} ^ {origin[1]})"]
        em.open()
        em.line("unsigned tt_m[4];")
        for m in range(4):
            reg = first | (m & 1) << m0 | (m >> 1) << m1
            em.line(f"memcpy(&tt_m[{m}], &{values}[{reg}], 2); "
                    f"memcpy(reinterpret_cast<char*>(&tt_m[{m}]) + 2, &{values}[{reg | 1 << half}], 2);")
        em.line(f"tt_stmatrix_x4(tt_shared_address(&tt_buf[{index(coords)}]), "
                "tt_m[0], tt_m[1], tt_m[2], tt_m[3]);")
        em.close()


def _read_paired_chunks(em: Emitter, linear: LinearLayout, name: str, strides: list[int], eb: int,
                        row_bits: int) -> None:
    """A block's registers from `tt_buf` holding `_PAIRED_CHUNK`s: a thread's runs of 16
    registers (`_paired_byte_chunks`) one chunk each, the columns put back in order."""
    em.declare_once(_WORD_GROUPS[16])
    for reg in range(0, linear.num_registers, 16):
        index = _swizzled(_offsets(em, linear, reg, strides, 0), eb, row_bits)
        em.open()
        em.line(f"tt_w16 tt_q = *reinterpret_cast<const tt_w16*>(&tt_buf[{index}]);")
        for column in range(0, 16, 2):
            at = _PAIRED_CHUNK.index(column)
            em.line(f"memcpy(&{name}[{reg + column}], reinterpret_cast<const char*>(&tt_q) + {at}, 2);")
        em.close()


# Scratch memory is seen as 128-byte units of eight 16-byte chunks (the 32 banks
# once); the chunks of a unit are permuted by XOR with the block's row number mod 8,
# so that threads writing or reading 32 bytes apart, or down a column, hit
# different banks. A row is a unit where rows are 128 bytes or shorter; a longer
# row (a stride of 256 bytes or more) spans several units, all permuted by that
# row's number (else the eight rows an mma fragment writes at once would share
# two permutations between them). Accesses of at most 16 aligned bytes stay inside
# one chunk; the bytes used do not change.
_CHUNK_BYTES, _CHUNKS_PER_ROW = 16, 8


def _swizzle_row_bits(strides: list[int], elem_bytes: int) -> int:
    """The element index bit where the row number that permutes the chunks starts:
    the smallest stride of at least 128 bytes, a power of two, else 128 bytes."""
    unit = _CHUNK_BYTES * _CHUNKS_PER_ROW // elem_bytes
    longer = [s for s in strides if s >= unit and s & (s - 1) == 0]
    return (min(longer) if longer else unit).bit_length() - 1


def _swizzled(index: str, elem_bytes: int, row_bits: int) -> str:
    """Where the element at `index` (a C expression) is placed, the row number
    starting at index bit `row_bits` (`_swizzle_row_bits`)."""
    chunk_bits = (_CHUNK_BYTES // elem_bytes).bit_length() - 1
    if index.isdigit():
        value = int(index)
        return str(value ^ (((value >> row_bits) & (_CHUNKS_PER_ROW - 1)) << chunk_bits))
    return f"(({index}) ^ (((({index}) >> {row_bits}) & {_CHUNKS_PER_ROW - 1}) << {chunk_bits}))"


# Aligned word groups for 4-, 8- and 16-byte shared accesses (no toolkit vector types).
_WORD_GROUPS = {2: "struct __align__(2) tt_w2 { unsigned short w[1]; };",
                4: "struct __align__(4) tt_w4 { unsigned w[1]; };",
                8: "struct __align__(8) tt_w8 { unsigned w[2]; };",
                16: "struct __align__(16) tt_w16 { unsigned w[4]; };"}


def _copy(em: Emitter, dst: str, src: str, nbytes: int, one_element: bool) -> None:
    """`dst = src` for `nbytes` bytes starting at these two lvalues: one plain
    assignment when that is one element (`one_element`), else one 2-, 4-, 8- or
    16-byte access of the shared side (its address is aligned to `nbytes`; the
    register side is copied bytewise)."""
    if one_element:
        em.line(f"{dst} = {src};")
        return
    if nbytes not in _WORD_GROUPS:
        raise CodegenError(f"no {nbytes}-byte shared access")
    em.declare_once(_WORD_GROUPS[nbytes])
    group = f"tt_w{nbytes}"
    shared_is_dst = dst.startswith("tt_buf[")
    if shared_is_dst:
        em.line(f"{{ {group} tt_q; memcpy(&tt_q, &{src}, {nbytes}); *reinterpret_cast<{group}*>(&{dst}) = tt_q; }}")
    else:
        em.line(f"{{ {group} tt_q = *reinterpret_cast<const {group}*>(&{src}); memcpy(&{dst}, &tt_q, {nbytes}); }}")


def _vector_width(linear: LinearLayout, strides: list[int], offset: int, elem_bytes: int,
                  least_bytes: int = 4) -> int:
    """How many consecutive registers (from each multiple of that count) a thread
    holds at consecutive scratch offsets `offset + sum(coord * stride)`, their
    first one aligned to the whole run, `least_bytes` (4 or 2) to 16 bytes in all:
    1 when none."""
    unit = [d for d, stride in enumerate(strides) if stride == 1 and linear.shape[d] > 1]
    if not unit:
        return 1
    dim = unit[-1]
    width = min(linear.contiguous_registers(dim), max(1, 16 // elem_bytes))
    while width > 1 and width * elem_bytes >= least_bytes:
        run_bits = width.bit_length() - 1
        others = list(linear.registers[run_bits:]) + list(linear.lanes) + list(linear.warps)
        aligned = offset % width == 0 and all(
            basis[d] * strides[d] % width == 0 for basis in others for d in range(linear.rank))
        if aligned:
            return width
        width //= 2
    return 1


# -- construction ---------------------------------------------------------------------

@emits("arange")
def emit_arange(em: Emitter, op: Operation) -> None:
    result = op.results[0]
    name = em.define_block(result)
    start = op.attrs["start"]
    position = em.coord_in_loop(em.linear(result), 0, "i")
    em.for_registers(em.nregs(result), f"{name}[i] = {start} + {position};" if start else
                     f"{name}[i] = {position};")


@emits("splat")
def emit_splat(em: Emitter, op: Operation) -> None:
    name = em.define_block(op.results[0])
    em.for_registers(em.nregs(op.results[0]), f"{name}[i] = {em.name(op.operands[0])};")


# -- shape ops ----------------------------------------------------------------------------

def _move(em: Emitter, op: Operation, to_src: CoordMap, write_strides: list[int],
          read_strides: list[int]) -> None:
    """Define the op's result from its operand: copies between registers when
    possible, else through shared memory."""
    src, dst = op.operands[0], op.results[0]
    sources = register_sources(em.linear(src), em.linear(dst), to_src)
    if sources == list(range(len(sources or ()))):
        # Register i is register i: the result is the operand's array (values
        # are never written after their definition; a loop's carried arrays
        # are assigned through temporaries), which keeps big kernels' sources small.
        em.bind(dst, em.name(src))
        return
    if sources is not None:
        copy_registers(em, src, em.define_block(dst), sources)
        return
    splits = _splits_of(op)
    if splits:
        _exchange_in_pieces(em, op, splits)
        return
    exchange(em, [(src, write_strides, 0)], [(dst, read_strides, 0)], _move_bytes(op))


def _splits_of(op: Operation) -> list[_Split]:
    """A conversion's pieces (`_conversion_splits`); none for the other moves. The
    same for the scratch the plan gives it (`move_scratch_bytes`) and its code."""
    if op.name != "convert_layout":
        return []
    src, dst = op.operands[0], op.results[0]
    shape = tuple(src.type.shape)
    return _conversion_splits(src.type.layout.linear(shape), dst.type.layout.linear(shape), _element_bytes(src))


def _move_bytes(op: Operation) -> int:
    return max(_numel(op.operands[0]), _numel(op.results[0])) * _element_bytes(op.operands[0])


def _is_register_move(op: Operation, to_src: CoordMap) -> bool:
    src, dst = op.operands[0], op.results[0]
    shape_src, shape_dst = tuple(src.type.shape), tuple(dst.type.shape)
    return register_sources(src.type.layout.linear(shape_src), dst.type.layout.linear(shape_dst),
                            to_src) is not None


def _broadcast_map(op: Operation) -> CoordMap:
    src_shape = op.operands[0].type.shape
    return lambda c: tuple(x if s != 1 else 0 for x, s in zip(c, src_shape))


def _expand_map(op: Operation) -> CoordMap:
    axis = op.attrs["axis"]
    return lambda c: c[:axis] + c[axis + 1:]


def _permute_map(op: Operation) -> CoordMap:
    order = tuple(op.attrs["order"])

    def to_src(c: Coord) -> Coord:
        src = [0] * len(order)
        for i, d in enumerate(order):
            src[d] = c[i]
        return tuple(src)

    return to_src


def _reshape_map(op: Operation) -> CoordMap:
    src_shape = tuple(op.operands[0].type.shape)
    dst_strides = row_major_strides(tuple(op.results[0].type.shape))
    src_strides = row_major_strides(src_shape)

    def to_src(c: Coord) -> Coord:
        index = sum(x * s for x, s in zip(c, dst_strides))
        return tuple((index // s) % n for s, n in zip(src_strides, src_shape))

    return to_src


@emits("broadcast")
def emit_broadcast(em: Emitter, op: Operation) -> None:
    src_shape = tuple(op.operands[0].type.shape)
    strides = row_major_strides(src_shape)
    reads = [0 if n == 1 else s for n, s in zip(src_shape, strides)]
    _move(em, op, _broadcast_map(op), strides, reads)


@emits("expand_dims")
def emit_expand_dims(em: Emitter, op: Operation) -> None:
    strides = row_major_strides(tuple(op.operands[0].type.shape))
    reads = list(strides)
    reads.insert(op.attrs["axis"], 0)
    _move(em, op, _expand_map(op), strides, reads)


@emits("permute")
def emit_permute(em: Emitter, op: Operation) -> None:
    if isinstance(op.results[0].type.layout, SwizzledSharedLayout):
        # a shared tile seen with permuted dims: the same bytes
        em.bind(op.results[0], em.name(op.operands[0]))
        return
    strides = row_major_strides(tuple(op.operands[0].type.shape))
    reads = [strides[d] for d in op.attrs["order"]]
    _move(em, op, _permute_map(op), strides, reads)


@emits("reshape")
def emit_reshape(em: Emitter, op: Operation) -> None:
    src, dst = op.operands[0], op.results[0]
    if not dst.type.is_block():
        # One element: every register of every thread holds it.
        em.define_scalar(dst, em.reg(src, 0))
        return
    _move(em, op, _reshape_map(op), row_major_strides(tuple(src.type.shape)),
          row_major_strides(tuple(dst.type.shape)))


@emits("convert_layout")
def emit_convert_layout(em: Emitter, op: Operation) -> None:
    strides = row_major_strides(tuple(op.operands[0].type.shape))
    _move(em, op, lambda c: c, strides, strides)


@needs_scratch("broadcast", "expand_dims", "permute", "reshape", "convert_layout")
def move_scratch_bytes(op: Operation) -> int:
    dst = op.results[0]
    if not dst.type.is_block() or isinstance(dst.type.layout, SwizzledSharedLayout):
        return 0
    maps = {"broadcast": _broadcast_map, "expand_dims": _expand_map, "permute": _permute_map,
            "reshape": _reshape_map, "convert_layout": lambda o: (lambda c: c)}
    if _is_register_move(op, maps[op.name](op)):
        return 0
    return _move_bytes(op) >> len(_splits_of(op))


# -- join, split: in registers where the pair is one register bit; cat: through shared memory

def _same_threads(paired: LinearLayout, half: LinearLayout) -> bool:
    """Whether each thread holds the same elements of a paired block (last dim 2)
    in `paired` as of either half in `half`: the pair is in registers alone."""
    return not any(b[-1] for b in paired.lanes + paired.warps) and (
        [b[:-1] for b in paired.lanes + paired.warps] == list(half.lanes + half.warps))


def split_sources(paired: LinearLayout, half: LinearLayout) -> list[list[int]] | None:
    """For each half (last coordinate 0, 1) of a paired block in `paired`, the
    register of `paired` holding each register's element in `half` in the same
    thread; None when the halves are in other threads."""
    if not _same_threads(paired, half):
        return None
    where = first_registers(paired)
    sources = []
    for j in (0, 1):
        found = [where.get(coords + (j,)) for coords in half.mapped_register_coords(lambda c: c)]
        if None in found:
            return None
        sources.append(found)
    return sources


def join_sources(paired: LinearLayout, half: LinearLayout) -> list[tuple[int, int]] | None:
    """For each register of a paired block in `paired`, (which half, its register
    in `half`) holding that element in the same thread; None when elsewhere."""
    if not _same_threads(paired, half):
        return None
    where = first_registers(half)
    sources = []
    for coords in paired.mapped_register_coords(lambda c: c):
        found = where.get(coords[:-1])
        if found is None:
            return None
        sources.append((coords[-1], found))
    return sources


def _pair_sources(op: Operation) -> list[list[int]] | list[tuple[int, int]] | None:
    """A split's `split_sources` or a join's `join_sources`, given the layouts of its
    paired block and its halves (which must share one); None when not in registers."""
    paired = op.operands[0] if op.name == "split" else op.results[0]
    halves = list(op.results) if op.name == "split" else list(op.operands)
    if halves[0].type.layout != halves[1].type.layout:
        return None
    layouts = (paired.type.layout.linear(tuple(paired.type.shape)),
               halves[0].type.layout.linear(tuple(halves[0].type.shape)))
    return (split_sources if op.name == "split" else join_sources)(*layouts)


@emits("join")
def emit_join(em: Emitter, op: Operation) -> None:
    a, b = op.operands
    out = op.results[0]
    sources = _pair_sources(op)
    if sources is not None:
        name = em.define_block(out)
        for reg, (j, source) in enumerate(sources):
            em.line(f"{name}[{reg}] = {em.reg(op.operands[j], source)};")
        return
    strides = row_major_strides(tuple(out.type.shape))
    exchange(em, [(a, strides[:-1], 0), (b, strides[:-1], 1)], [(out, strides, 0)], join_scratch_bytes(op))


@emits("split")
def emit_split(em: Emitter, op: Operation) -> None:
    src = op.operands[0]
    sources = _pair_sources(op)
    if sources is not None:
        for result, regs in zip(op.results, sources):
            copy_registers(em, src, em.define_block(result), regs)
        return
    strides = row_major_strides(tuple(src.type.shape))
    exchange(em, [(src, strides, 0)], [(op.results[0], strides[:-1], 0), (op.results[1], strides[:-1], 1)],
             join_scratch_bytes(op))


@emits("cat")
def emit_cat(em: Emitter, op: Operation) -> None:
    a, b = op.operands
    if len(a.type.shape) != 1:
        raise CodegenError(f"cat of {a.type} at {op.loc}: only 1-D blocks")
    exchange(em, [(a, [1], 0), (b, [1], a.type.shape[0])], [(op.results[0], [1], 0)], join_scratch_bytes(op))


@needs_scratch("join", "split", "cat")
def join_scratch_bytes(op: Operation) -> int:
    if op.name != "cat" and _pair_sources(op) is not None:
        return 0
    values = list(op.operands) + list(op.results)
    return max(_numel(v) for v in values) * _element_bytes(op.operands[0])
