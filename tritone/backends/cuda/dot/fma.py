"""`tl.dot` with scalar fused multiply-adds: every target, every dtype.

The result is in a blocked layout (each thread a few rows by a few columns);
both operands are plain row-major shared tiles. For each k, every thread
reads the a elements of its rows and the b elements of its columns and
updates its accumulators, in k order. Products of fp16/bf16/fp8 values are
exact in fp32; fp32 is multiplied at full precision (tf32 and tf32x3 ask for
no less); int8 products accumulate in saturating int32; an fp16 accumulator is
rounded after each step.
"""

from __future__ import annotations

from tritone.ir.core import Operation
from tritone.ir.types import type_text

from ....ir.layouts import BlockedLayout, DistributedLayout, SwizzledSharedLayout, default_blocked_layout
from ..codegen_base import CodegenError
from ..codegen_layout import _unique_registers
from ..codegen_types import ctype, is_narrow_float, narrow, widen
from . import DotImplementation, register
from .shared import TileGeometry, operand_shared_layout, tile_range

_UNROLL = 4


class FmaDot(DotImplementation):
    name = "fma"

    def supports(self, op: Operation, target: int) -> bool:
        return True

    def infer_layout(self, op: Operation, target: int, num_warps: int, chained: bool) -> DistributedLayout:
        shape = tuple(op.results[0].type.shape)
        rank = len(shape)
        m, n = shape[-2], shape[-1]
        numel = 1
        for s in shape:
            numel *= s
        per_thread = max(1, numel // (32 * num_warps))
        spt_n = min(n, 4, per_thread)
        spt_m = min(m, 4, max(1, per_thread // spt_n))
        return default_blocked_layout(shape, num_warps, None, (1,) * (rank - 2) + (spt_m, spt_n))

    def shared_operand_layout(self, op: Operation, index: int, contiguous_dim: int) -> SwizzledSharedLayout:
        value = op.operands[index]
        return operand_shared_layout(index, tuple(value.type.shape), value.type.scalar.itemsize, contiguous_dim,
                                     swizzle=False)

    def lower(self, op: Operation, em) -> None:
        a, b, acc = op.operands
        result = op.results[0]
        if not isinstance(result.type.layout, BlockedLayout):
            raise CodegenError(f"FMA dot at {op.loc}: result layout {result.type.layout} is not blocked")
        linear = em.linear(result)
        rank = linear.rank
        name = em.define_block(result)
        em.copy(name, em.name(acc), acc)
        k_size = a.type.shape[-1]
        for tile in (a, b):
            start, end = tile_range(tile)
            em.shared_access(start, end, False)
        a_reader = _ElementReader(em, a, k_dim=rank - 1)
        b_reader = _ElementReader(em, b, k_dim=rank - 2)
        unique = _unique_registers(linear)
        rows, cols = {}, {}
        for reg in unique:
            c = linear.register_coords(reg)
            rows.setdefault(c[:-1], len(rows))
            cols.setdefault(c[:-2] + c[-1:], len(cols))
        thread = [em.thread_coord(linear, d) for d in range(rank)]
        em.lines.append(f"#pragma unroll {_UNROLL}")
        em.open(f"for (int tt_k = 0; tt_k < {k_size}; ++tt_k)")
        a_names = {key: a_reader.read(thread[:-1], key, "tt_k") for key in rows}
        b_names = {key: b_reader.read(thread[:-2] + thread[-1:], key, "tt_k") for key in cols}
        acc_ty = result.type.scalar
        for reg in unique:
            c = linear.register_coords(reg)
            update = _multiply_add(acc_ty, a_names[c[:-1]], b_names[c[:-2] + c[-1:]], f"{name}[{reg}]")
            em.line(f"{name}[{reg}] = {update};")
        em.close()
        first = {}
        for reg in range(linear.num_registers):
            c = linear.register_coords(reg)
            if c in first:
                em.line(f"{name}[{reg}] = {name}[{first[c]}];")
            else:
                first[c] = reg


def _multiply_add(acc_ty, a: str, b: str, acc: str) -> str:
    if acc_ty.is_int():
        # int32 sums saturate, as the tensor cores' `.satfinite` (and the interpreter)
        return (f"(int)max(min((long long){acc} + (long long)({a} * {b}), 2147483647LL), "
                f"-2147483648LL)")
    if type_text(acc_ty) == "fp64":
        return f"fma({a}, {b}, {acc})"
    if is_narrow_float(acc_ty):
        return narrow(f"fmaf({a}, {b}, {widen(acc, acc_ty)})", acc_ty)
    return f"fmaf({a}, {b}, {acc})"


class _ElementReader:
    """Reads one element of an unswizzled operand tile at (this thread's
    coordinates + constants, k), as the compute type (fp32, fp64 or int)."""

    def __init__(self, em, tile, k_dim: int):
        self.em = em
        self.tile = tile
        self.k_dim = k_dim
        self.ty = tile.type.scalar
        self.geom = TileGeometry(tile.type.layout, tuple(tile.type.shape), self.ty.itemsize)
        if self.geom.swizzled:
            raise CodegenError(f"FMA dot: operand tile {tile.type} is swizzled")
        rank = len(self.geom.shape)
        inner = self.geom.inner
        self.strides = [0] * rank
        for d, s in self.geom.row_strides().items():
            self.strides[d] = s * self.geom.shape[inner] * self.geom.elem_bytes
        self.strides[inner] = self.geom.elem_bytes

    def read(self, thread: list[str], const: tuple[int, ...], k: str) -> str:
        """Define a variable holding the element and return its name; `thread`
        and `const` give the coordinates of every dim but k, in order."""
        em = self.em
        dims = [d for d in range(len(self.strides)) if d != self.k_dim]
        terms = [f"{em.name(self.tile)}"]
        offset = 0
        for d, t, c in zip(dims, thread, const):
            if t != "0":
                terms.append(f"({t}) * {self.strides[d]}")
            offset += c * self.strides[d]
        if offset:
            terms.append(str(offset))
        terms.append(f"{k} * {self.strides[self.k_dim]}")
        value = f"*reinterpret_cast<const {ctype(self.ty)}*>(tt_smem + {' + '.join(terms)})"
        name = em.fresh("tt_op")
        if self.ty.is_int():
            em.line(f"const int {name} = (int){value};")
        elif type_text(self.ty) == "fp64":
            em.line(f"const double {name} = {value};")
        else:
            em.line(f"const float {name} = {widen(value, self.ty)};")
        return name


register(FmaDot())
