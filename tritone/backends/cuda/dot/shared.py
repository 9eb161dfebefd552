"""Shared-memory tiles: the staging buffers of dot operands.

A block value whose layout is a `SwizzledSharedLayout` lives in shared memory,
not in registers: in the generated C++ it is one `unsigned` holding the byte
offset of its first element from `tt_smem` (the kernel's dynamic shared
memory). Element `coords` of a tile of `shape` is at byte
`layout.offset(shape, coords) * itemsize` from there (PTX_FACTS 4: 16-byte
chunks of a row XOR-swizzled by the row, so that `ldmatrix` and vector stores
hit all 32 banks).

The GPU ops that make and use tiles (code in `codegen_dot.py`; docs/IR.md lists
them): `local_alloc(x)` stores a register block into a new tile;
`local_buffer()` is a multi-stage buffer `[stages, *tile]` for the software
pipeline, `local_index(buffer, i)` its tile `i`, `async_copy(buffer, i, ptr[,
mask])` copies global memory into tile `i` with `cp.async` (zeros where the
mask is off), `async_commit()` / `async_wait() {pending}` group and await those
copies; `permute` of a tile is the same bytes seen with permuted dims.

This module chooses tile layouts (Triton's rule for mma operands, PTX_FACTS 4)
and writes the C++ for tile addresses: the general swizzle formula, and a
split form, `(per-thread part computed once) + constant`, for accesses whose
constant part cannot disturb the swizzle.
"""

from __future__ import annotations

from dataclasses import dataclass

from tritone.ir.core import Value
from tritone.ir.types import dtype

from ....ir.layouts import LinearLayout, NvmmaSharedLayout, SwizzledSharedLayout
from ..axis_info import AxisInfo, max_vector_elements

TILE_DEFINING_OPS = ("local_alloc", "local_buffer")


def is_shared_tile(value: Value) -> bool:
    """Whether `value` is a block that lives in shared memory."""
    return value.type.is_block() and isinstance(value.type.layout, SwizzledSharedLayout)


def fenced_where_written(em, tile: Value) -> bool:
    """Whether the stores of `tile`'s `local_alloc` are followed by the async-proxy fence
    (`codegen_dot.emit_local_alloc`), so the wgmma dots reading the tile need none of
    their own (`wgmma.stage_writer`): an sm_90+ tile in wgmma's layout."""
    return em.target >= 90 and isinstance(tile.type.layout, NvmmaSharedLayout)


def tile_bytes(ty: dtype) -> int:
    """Bytes of a shared tile (or multi-stage buffer) of block type `ty`."""
    n = 1
    for s in ty.shape:
        n *= s
    return n * ty.scalar.itemsize


def tile_range(value: Value) -> tuple[int, int]:
    """The shared bytes [start, end) a tile (or a view of one) may occupy: its
    own, or for a tile of a multi-stage buffer the whole buffer's. Needs the
    `offset` attributes `smem.py` sets."""
    op = value.defining_op
    while op is not None and op.name not in TILE_DEFINING_OPS:
        op = op.operands[0].defining_op if op.operands else None
    if op is None or "offset" not in op.attrs:
        raise ValueError(f"shared tile {value.type} has no planned offset")
    start = int(op.attrs["offset"])
    return start, start + tile_bytes(op.results[0].type)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def operand_shared_layout(index: int, shape: tuple[int, ...], elem_bytes: int, contiguous_dim: int,
                          swizzle: bool = True) -> SwizzledSharedLayout:
    """The tile layout of dot operand `index` (0: a `[.., M, K]`, 1: b `[.., K, N]`),
    stored contiguous along `contiguous_dim` as it comes.

    With `swizzle`, Triton's parameters for mma operands (PTX_FACTS 4): a
    16-byte `ldmatrix` row is one swizzle chunk when K is contiguous; when M
    (or N) is, chunks are 8 elements; the phase changes every `128 B / row`
    rows and takes as many values as there are 8-row (or k-block) groups in
    128 bytes. Without, a plain row-major layout (the FMA path)."""
    rank = len(shape)
    k_dim = rank - 1 if index == 0 else rank - 2
    order = (contiguous_dim,) + tuple(d for d in reversed(range(rank)) if d != contiguous_dim)
    if not swizzle:
        return SwizzledSharedLayout(1, 1, 1, order)
    inner = shape[contiguous_dim]
    k_block = max(1, 16 // elem_bytes)  # K elements of one 16-byte ldmatrix row
    per_phase = max(1, 128 // (inner * elem_bytes))
    if contiguous_dim == k_dim:
        vec, groups = k_block, 8
    else:
        vec, groups = 8, k_block
    vec = min(vec, inner)
    max_phase = max(1, min(groups // per_phase, inner // vec))
    return SwizzledSharedLayout(vec, per_phase, max_phase, order)


@dataclass(frozen=True)
class TileGeometry:
    """Where the elements of a shared tile of `shape` in `layout` are.

    A *row* is one line along the contiguous dim, `width` elements wide: the whole
    extent, or one swizzle span of an `NvmmaSharedLayout` tile, whose contiguous
    dim is cut into `columns` such column blocks stored one after the other."""

    layout: SwizzledSharedLayout
    shape: tuple[int, ...]
    elem_bytes: int

    @property
    def inner(self) -> int:
        return self.layout.order[0]

    @property
    def width(self) -> int:
        """Elements of the contiguous dim in one stored row."""
        extent = self.shape[self.inner]
        if isinstance(self.layout, NvmmaSharedLayout):
            return min(extent, self.layout.span)
        return extent

    @property
    def row_bytes(self) -> int:
        return self.width * self.elem_bytes

    @property
    def column_bytes(self) -> int:
        """Bytes of one column block (every row, `width` elements each)."""
        rows = 1
        for d in self.layout.order[1:]:
            rows *= self.shape[d]
        return rows * self.row_bytes

    def row_strides(self) -> dict[int, int]:
        """For each dim but the contiguous one, how many rows one step along it moves."""
        strides, stride = {}, 1
        for d in self.layout.order[1:]:
            strides[d] = stride
            stride *= self.shape[d]
        return strides

    @property
    def swizzled(self) -> bool:
        return self.layout.max_phase > 1 and self.layout.vec < self.width

    def byte_offset(self, coords: tuple[int, ...]) -> int:
        """The byte offset of element `coords` (Python, for checks and tests)."""
        return self.layout.offset(self.shape, coords) * self.elem_bytes

    def general_offset(self, coords: list[str]) -> str:
        """C++ for the byte offset of the element at C++ coordinates `coords` (any values)."""
        rows = [f"({coords[d]}) * {s}" if s != 1 else f"({coords[d]})" for d, s in self.row_strides().items()
                if coords[d] != "0"]
        row = " + ".join(rows) if rows else "0"
        col = coords[self.inner]
        column = ""
        if self.width < self.shape[self.inner]:
            column = f"((({col}) >> {_log2(self.width)}) * {self.column_bytes}) + "
            col = f"(({col}) & {self.width - 1})"
        eb = self.elem_bytes
        if not self.swizzled:
            return f"({column}(({row}) * {self.width} + ({col})) * {eb})"
        lay = self.layout
        lv, lpp = _log2(lay.vec), _log2(lay.per_phase)
        chunk = f"((({col}) >> {lv}) ^ ((({row}) >> {lpp}) & {lay.max_phase - 1}))"
        within = f" + (({col}) & {lay.vec - 1})" if lay.vec > 1 else ""
        return f"({column}({row}) * {self.row_bytes} + (({chunk} << {lv}){within}) * {eb})"


@dataclass(frozen=True)
class ThreadPart:
    """This thread's part of a coordinate: a C++ expression and the bits it may have set."""

    expr: str
    bits: int


def possible_bits(values) -> int:
    """The bits a sum of distinct-bit basis values (XOR-combined) may set."""
    out = 0
    for v in values:
        out |= int(v)
    return out


def add_parts(a: ThreadPart, b: ThreadPart) -> ThreadPart:
    """The sum of two thread parts (bits exact when they cannot overlap)."""
    if a.expr == "0":
        return b
    if b.expr == "0":
        return a
    if a.bits & b.bits:
        top = max(a.bits, b.bits).bit_length() + 1
        bits = (1 << top) - 1
    else:
        bits = a.bits | b.bits
    return ThreadPart(f"({a.expr} + {b.expr})", bits)


def split_offset(em, geom: TileGeometry, thread: list[ThreadPart], const: tuple[int, ...]) -> str | None:
    """C++ for the byte offset of element `thread + const` as a per-thread value
    (computed once in the kernel's prologue) plus a constant, or None when the
    constant part could change the swizzle in a thread-dependent way.

    Needs: the constant row a multiple of the swizzle period (`per_phase *
    max_phase` rows), the constant column and every thread column starting a
    chunk, and the constant chunk index sharing no bit with the thread's. In a
    tile of column blocks, the thread's and the constant's columns share no bit:
    their sum then carries into no block, and the thread's block joins its value."""
    lay = geom.layout
    eb = geom.elem_bytes
    strides = geom.row_strides()
    inner = geom.inner
    if any(c < 0 for c in const):
        return None
    col = thread[inner]
    column_bytes = 0
    thread_block = ""
    if geom.width < geom.shape[inner]:
        if const[inner] & col.bits:
            return None
        column_bytes = (const[inner] // geom.width) * geom.column_bytes
        const = const[:inner] + (const[inner] % geom.width,) + const[inner + 1:]
        if col.bits >= geom.width:
            thread_block = f"((({col.expr}) >> {_log2(geom.width)}) * {geom.column_bytes}) + "
            col = ThreadPart(f"(({col.expr}) & {geom.width - 1})", col.bits & (geom.width - 1))
    const_row = sum(const[d] * s for d, s in strides.items())
    row_terms = [f"({thread[d].expr}) * {s}" if s != 1 else f"({thread[d].expr})"
                 for d, s in strides.items() if thread[d].expr != "0"]
    thread_row = " + ".join(row_terms) if row_terms else "0"
    if not geom.swizzled:
        const_bytes = column_bytes + (const_row * geom.width + const[inner]) * eb
        key = ("tile_linear", geom.width, eb, thread_row, col.expr, thread_block)
        base = prologue_value(em, key, f"{thread_block}(({thread_row}) * {geom.width} + ({col.expr})) * {eb}")
        return f"{base} + {const_bytes}" if const_bytes else base
    period = lay.per_phase * lay.max_phase
    vec_mask = lay.vec - 1
    if const_row % period or const[inner] & vec_mask or col.bits & vec_mask:
        return None
    lv = _log2(lay.vec)
    const_chunk = const[inner] >> lv
    if const_chunk & (col.bits >> lv):
        return None
    lpp = _log2(lay.per_phase)
    shift = lv + _log2(eb)
    row_key = ("tile_row", geom.row_bytes, thread_row, thread_block)
    row_bytes = prologue_value(em, row_key, f"{thread_block}({thread_row}) * {geom.row_bytes}")
    x_key = ("tile_x", lv, lpp, lay.max_phase, thread_row, col.expr)
    x = prologue_value(em, x_key, f"(({col.expr}) >> {lv}) ^ ((({thread_row}) >> {lpp}) & {lay.max_phase - 1})")
    const_bytes = column_bytes + const_row * geom.row_bytes
    if const_chunk == 0:
        base = prologue_value(em, ("tile_base", row_bytes, x, shift), f"{row_bytes} + ({x} << {shift})")
        return f"{base} + {const_bytes}" if const_bytes else base
    out = f"{row_bytes} + (({x} ^ {const_chunk}) << {shift})"
    return f"{out} + {const_bytes}" if const_bytes else out


def prologue_value(em, key: tuple, expr: str) -> str:
    """A per-thread `unsigned` computed once at the kernel's start (shared by equal keys)."""
    names = em.memo.setdefault("prologue_values", {})
    if key not in names:
        name = f"tt_sh{len(names)}"
        em.prologue.append(f"const unsigned {name} = {expr};")
        names[key] = name
    return names[key]


def tile_offset(em, geom: TileGeometry, thread: list[ThreadPart], const: tuple[int, ...]) -> str:
    """C++ for the byte offset of element `thread + const`: the split form when it applies."""
    split = split_offset(em, geom, thread, const)
    if split is not None:
        return split
    coords = []
    for part, c in zip(thread, const):
        if part.expr == "0":
            coords.append(str(c))
        elif c == 0:
            coords.append(part.expr)
        else:
            coords.append(f"({part.expr} + {c})")
    return geom.general_offset(coords)


def layout_thread_parts(em, linear: LinearLayout) -> list[ThreadPart]:
    """The per-thread coordinate parts of a distributed layout (lane and warp bases)."""
    parts = []
    for d in range(linear.rank):
        expr = em.thread_coord(linear, d)
        bits = possible_bits(b[d] for b in linear.lanes + linear.warps)
        parts.append(ThreadPart(expr, bits))
    return parts


def smem_address(em) -> str:
    """The name of the shared-window address of `tt_smem` (for PTX operands)."""
    if "smem_u32" not in em.memo:
        em.declare_once(
            "static __device__ __forceinline__ unsigned tt_shared_u32(const void* p) {\n"
            "  unsigned r;\n"
            '  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));\n'
            "  return r;\n"
            "}")
        em.prologue.append("const unsigned tt_smem_u32 = tt_shared_u32(tt_smem);")
        em.memo["smem_u32"] = "tt_smem_u32"
    em.uses_scratch = True
    return em.memo["smem_u32"]


def copy_plan(linear: LinearLayout, ptr_info: AxisInfo, mask_info: AxisInfo | None,
              geom: TileGeometry, elem_bytes: int) -> tuple[int, bool]:
    """(elements per `cp.async`, whether their mask bits may differ): the widest copy
    that contiguity, alignment and the swizzle chunk allow. Where the mask is not
    provably constant over that many elements (a bound the analysis cannot see
    divide, such as a shape read from memory), each copy checks its bits at run
    time: all set, one copy; none, a zero fill; some, element by element
    (`emit_async_copy`)."""
    dim = geom.inner
    vec = _pow2_floor(min(linear.contiguous_registers(dim), max_vector_elements(ptr_info, dim, elem_bytes),
                          geom.layout.vec if geom.swizzled else geom.width))
    split = mask_info is not None and mask_info.constancy[dim] < vec and vec * elem_bytes >= 4
    return vec, split


def _pow2_floor(n: int) -> int:
    return max(1, 1 << (max(1, n).bit_length() - 1))
