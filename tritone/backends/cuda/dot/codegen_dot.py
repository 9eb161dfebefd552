"""Code generation for `dot` and the shared-tile ops (`shared.py` says what they mean).

Barriers: a tile's writers and readers note their byte ranges with
`Emitter.shared_access`, which puts a `__syncthreads()` before an access that
may conflict with one since the last barrier. `cp.async` copies are not noted:
the software pipeline writes a stage only after the barrier that follows the
last reads of it, and its readers wait for the copies and then synchronise
(`async_wait`).
"""

from __future__ import annotations

import dataclasses

from tritone.ir.core import Operation, Value

from ..codegen_base import CodegenError, Emitter, emits
from ..codegen_layout import _unique_registers
from ..codegen_memory import owner_condition
from . import select
from .shared import (
    TileGeometry,
    copy_plan,
    fenced_where_written,
    layout_thread_parts,
    smem_address,
    tile_bytes,
    tile_offset,
)

_ST_SHARED = {1: ("u8", "h", "unsigned short", 1), 2: ("b16", "h", "unsigned short", 1),
              4: ("b32", "r", "unsigned", 1), 8: ("v2.b32", "r", "unsigned", 2), 16: ("v4.b32", "r", "unsigned", 4)}


@emits("dot")
def emit_dot(em: Emitter, op: Operation) -> None:
    select(op, em.target).lower(op, em)


def tile_geometry(value: Value) -> TileGeometry:
    """The geometry of a shared tile value."""
    return TileGeometry(value.type.layout, tuple(value.type.shape), value.type.scalar.itemsize)


def stage_geometry(buffer: Value) -> TileGeometry:
    """The geometry of one stage (tile) of a multi-stage buffer `[stages, *tile]`."""
    layout = buffer.type.layout
    tile_order = tuple(d - 1 for d in layout.order if d != 0)
    tile = dataclasses.replace(layout, order=tile_order)
    return TileGeometry(tile, tuple(buffer.type.shape[1:]), buffer.type.scalar.itemsize)


def _define_tile(em: Emitter, value: Value, expr: str) -> str:
    name = em.new_name(value, "s")
    em.line(f"const unsigned {name} = {expr};  // shared tile {value.type}")
    return name


@emits("local_alloc")
def emit_local_alloc(em: Emitter, op: Operation) -> None:
    source, tile = op.operands[0], op.results[0]
    offset = int(op.attrs["offset"])
    name = _define_tile(em, tile, f"{offset}u")
    geom = tile_geometry(tile)
    em.shared_access(offset, offset + tile_bytes(tile.type), True)
    linear = em.linear(source)
    eb = geom.elem_bytes
    chunk = geom.layout.vec if geom.swizzled else geom.width
    run = max(1, min(linear.contiguous_registers(geom.inner), chunk, max(1, 16 // eb)))
    thread = layout_thread_parts(em, linear)
    base = smem_address(em)
    unique = set(_unique_registers(linear))
    values = em.name(source)
    for first in range(0, linear.num_registers, run):
        if first not in unique:
            continue
        offset_expr = tile_offset(em, geom, thread, linear.register_coords(first))
        _store_shared(em, f"{base} + {name} + {offset_expr}", values, first, run * eb)
    if fenced_where_written(em, tile):
        # wgmma reads the tile through the async proxy: these writes made visible to it
        # here, once (wgmma.stage_writer), before the barrier that precedes the dot
        em.line('asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')


def _store_shared(em: Emitter, address: str, values: str, first: int, nbytes: int) -> None:
    ptx_type, constraint, word, words = _ST_SHARED[nbytes]
    em.open()
    em.line(f"{word} tt_w[{words}];")
    em.line(f"memcpy(tt_w, &{values}[{first}], {nbytes});")
    targets = ", ".join(f"%{i + 1}" for i in range(words))
    targets = f"{{{targets}}}" if words > 1 else targets
    ins = ", ".join([f'"r"({address})'] + [f'"{constraint}"(tt_w[{i}])' for i in range(words)])
    em.line(f'asm volatile("st.shared.{ptx_type} [%0], {targets};" :: {ins} : "memory");')
    em.close()


@emits("local_buffer")
def emit_local_buffer(em: Emitter, op: Operation) -> None:
    _define_tile(em, op.results[0], f"{int(op.attrs['offset'])}u")


@emits("local_index")
def emit_local_index(em: Emitter, op: Operation) -> None:
    buffer, index = op.operands
    stage = tile_bytes(op.results[0].type)
    _define_tile(em, op.results[0], f"{em.name(buffer)} + (unsigned)({em.name(index)}) * {stage}u")


def _cp_async_helper(em: Emitter, nbytes: int) -> str:
    # .cg (L2 only) exists for 16-byte copies only (PTX_FACTS 3.1)
    cache = "cg" if nbytes == 16 else "ca"
    name = f"tt_cp_async{nbytes}"
    em.declare_once(
        f"static __device__ __forceinline__ void {name}(unsigned dst, const void* src, bool pred) {{\n"
        f'  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes}, %2;" :: "r"(dst), "l"(src), '
        f'"r"(pred ? {nbytes} : 0) : "memory");\n'
        "}")
    return name


@emits("async_copy")
def emit_async_copy(em: Emitter, op: Operation) -> None:
    buffer, index, ptr = op.operands[:3]
    mask = op.operands[3] if len(op.operands) > 3 else None
    geom = stage_geometry(buffer)
    linear = em.linear(ptr)
    eb = geom.elem_bytes
    vec, split = copy_plan(linear, em.axis_info(ptr), em.axis_info(mask) if mask is not None else None, geom, eb)
    nbytes = vec * eb
    if nbytes not in (4, 8, 16):
        raise CodegenError(f"async_copy at {op.loc}: {nbytes}-byte pieces cannot be copied with cp.async")
    helper = _cp_async_helper(em, nbytes)
    thread = layout_thread_parts(em, linear)
    stage = em.fresh("tt_stage")
    em.line(f"const unsigned {stage} = {smem_address(em)} + {em.name(buffer)} + "
            f"(unsigned)({em.name(index)}) * {tile_bytes(buffer.type) // buffer.type.shape[0]}u;")
    owner = owner_condition(linear)
    unique = set(_unique_registers(linear))
    if owner:
        em.open(f"if ({owner})")
    for first in range(0, linear.num_registers, vec):
        if first not in unique:
            continue
        offset = tile_offset(em, geom, thread, linear.register_coords(first))
        if split:
            _emit_split_copy(em, helper, f"{stage} + {offset}", ptr, mask, first, vec, eb)
            continue
        pred = em.reg(mask, first) if mask is not None else "true"
        em.line(f"{helper}({stage} + {offset}, {em.reg(ptr, first)}, {pred});")
    if owner:
        em.close()


# element bytes -> (the C type read from global memory, the register type, st.shared's
# width, its asm constraint); one byte goes through a 16-bit register, as LLVM writes it
_ELEMENT_COPY = {1: ("unsigned char", "unsigned short", "u8", "h"), 2: ("unsigned short", "unsigned short", "u16", "h"),
                 4: ("unsigned", "unsigned", "b32", "r"), 8: ("unsigned long long", "unsigned long long", "b64", "l")}


def _emit_split_copy(em: Emitter, helper: str, dst: str, ptr: Value, mask: Value, first: int, vec: int,
                     eb: int) -> None:
    """One `cp.async` of `vec` elements whose mask bits may differ: every bit set, the
    copy; none, a zero fill (no byte read); some (the edge of the tensor), element by
    element, zeros where the mask is off, stored to the tile before the trip's barrier."""
    bits = [em.reg(mask, first + j) for j in range(vec)]
    every, some = em.fresh("tt_all"), em.fresh("tt_any")
    em.line(f"const bool {every} = {' && '.join(bits)};")
    em.line(f"const bool {some} = {' || '.join(bits)};")
    em.open(f"if ({every} || !{some})")
    em.line(f"{helper}({dst}, {em.reg(ptr, first)}, {every});")
    em.close()
    em.open("else")
    loaded, register, width, constraint = _ELEMENT_COPY[eb]
    for j in range(vec):
        element = f"{bits[j]} ? ({register})*(const {loaded}*)({em.reg(ptr, first + j)}) : ({register})0"
        em.line(f'asm volatile("st.shared.{width} [%0], %1;" :: "r"({dst} + {j * eb}u), "{constraint}"({element}) '
                f': "memory");')
    em.close()


@emits("async_commit")
def emit_async_commit(em: Emitter, op: Operation) -> None:
    em.line('asm volatile("cp.async.commit_group;" ::: "memory");')


@emits("async_wait")
def emit_async_wait(em: Emitter, op: Operation) -> None:
    pending = int(op.attrs.get("pending", 0))
    # A tab before the count, as LLVM prints the instruction in Triton's PTX (tools
    # and Triton's own tests search the PTX for that text).
    em.line(f'asm volatile("cp.async.wait_group \\t{pending};" ::: "memory");')
    # No proxy fence for the tensor cores (wgmma) reading these tiles, as in Triton, whose
    # fence insertion fences only tiles written from registers: a fence here ran on every
    # trip of a K loop (a MEMBAR.ALL.CTA in SASS) and cost 2-7% of an fp8 matmul on an H100.
    # the copies are visible to their own threads; the barrier makes them everyone's
    em.barrier()
