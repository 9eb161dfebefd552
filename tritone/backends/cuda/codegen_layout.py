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

from typing import Callable

from tritone.ir.core import Operation, Value

from .codegen_base import (
    CodegenError,
    Emitter,
    emits,
    linear_index_expr,
    needs_scratch,
    row_major_strides,
)
from .codegen_types import ctype
from .layouts import Coord, LinearLayout, SwizzledSharedLayout

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
    where: dict[Coord, int] = {}
    for reg in range(src.num_registers):
        where.setdefault(src.register_coords(reg), reg)
    sources = []
    for reg in range(dst.num_registers):
        found = where.get(to_src(dst.register_coords(reg)))
        if found is None:
            return None
        sources.append(found)
    return sources


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


def copy_registers(em: Emitter, src: Value, dst_name: str, sources: list[int]) -> None:
    """`dst[r] = src[sources[r]]`, as one unrolled loop when the map is the identity."""
    if sources == list(range(len(sources))):
        em.for_registers(len(sources), f"{dst_name}[i] = {em.name(src)}[i];")
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


def _offsets(em: Emitter, value: Value, reg: int, strides: list[int], offset: int) -> str:
    if not value.type.is_block():
        return str(offset)
    linear = em.linear(value)
    coords = [em.coord(linear, d, reg) for d in range(linear.rank)]
    return linear_index_expr(coords, strides, offset)


def exchange(em: Emitter, writes: list[tuple[Value, list[int], int]],
             reads: list[tuple[Value, list[int], int]], nbytes: int) -> None:
    """Move elements through shared scratch memory: each written value's
    elements go to `offset + sum(coord * stride)`, then each read value (a
    result, defined here) takes its elements from there."""
    elem = ctype(writes[0][0].type)
    names = [em.define(value) for value, _, _ in reads]
    em.barrier()
    em.open()
    em.line(f"{elem}* tt_buf = {em.scratch(elem, 0, nbytes)};")
    for value, strides, offset in writes:
        regs = _unique_registers(em.linear(value)) if value.type.is_block() else [0]
        for reg in regs:
            em.line(f"tt_buf[{_offsets(em, value, reg, strides, offset)}] = {em.reg(value, reg)};")
    em.barrier()
    for (value, strides, offset), name in zip(reads, names):
        if value.type.is_block():
            for reg in range(em.nregs(value)):
                em.line(f"{name}[{reg}] = tt_buf[{_offsets(em, value, reg, strides, offset)}];")
        else:
            em.line(f"{name} = tt_buf[{offset}];")
    em.close()


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
    if sources is not None:
        copy_registers(em, src, em.define_block(dst), sources)
        return
    exchange(em, [(src, write_strides, 0)], [(dst, read_strides, 0)], _move_bytes(op))


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
    return 0 if _is_register_move(op, maps[op.name](op)) else _move_bytes(op)


# -- join, split, cat: always through shared memory -------------------------------------

@emits("join")
def emit_join(em: Emitter, op: Operation) -> None:
    a, b = op.operands
    out = op.results[0]
    strides = row_major_strides(tuple(out.type.shape))
    exchange(em, [(a, strides[:-1], 0), (b, strides[:-1], 1)], [(out, strides, 0)], join_scratch_bytes(op))


@emits("split")
def emit_split(em: Emitter, op: Operation) -> None:
    src = op.operands[0]
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
    values = list(op.operands) + list(op.results)
    return max(_numel(v) for v in values) * _element_bytes(op.operands[0])
