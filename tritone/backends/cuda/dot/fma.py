"""`tl.dot` with scalar fused multiply-adds: every target, every dtype.

The result is in a blocked layout (each thread a few rows by a few columns);
both operands are plain row-major shared tiles. For each k, every thread
reads the a elements of its rows and the b elements of its columns and
updates its accumulators, in k order. fp32 and fp64 operands are read in
16-byte vectors, as upstream's FMA dot ends up reading them: along k where k
is the tile's contiguous dim (a of a row-major matmul: four k of a row per
read, so the loop steps four k at a time), else across the thread's
consecutive rows or columns (b: four columns per read).

Products of fp16/bf16/fp8 values are exact in fp32; fp32 is multiplied at
full precision (tf32 and tf32x3 ask for no less); int8 products accumulate in
saturating int32; an fp16 accumulator is rounded after each step.
"""

from __future__ import annotations

from tritone.ir.core import Operation
from tritone.ir.types import type_text

from ....ir.layouts import BlockedLayout, DistributedLayout, LinearLayout, SwizzledSharedLayout, default_blocked_layout
from ..codegen_base import CodegenError
from ..codegen_layout import _unique_registers
from ..codegen_types import ctype, is_narrow_float, narrow, widen
from . import DotImplementation, register
from .shared import TileGeometry, operand_shared_layout, tile_range

# k per trip of the k loop (unrolled no further by the pragma): one 16-byte vector of fp32
# k. Two vectors per trip saved about 1% of the instructions of Inductor's fp32 mm
# configs on sm_90 but cost some of them a CTA per SM (ptxas took more registers).
_K_PER_TRIP = 4


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
        unique = _unique_registers(linear)
        rows, cols = {}, {}
        for reg in unique:
            c = linear.register_coords(reg)
            rows.setdefault(c[:-1], len(rows))
            cols.setdefault(c[:-2] + c[-1:], len(cols))
        thread = [em.thread_coord(linear, d) for d in range(rank)]
        a_reader = _OperandReader(em, a, rank - 1, list(rows), thread[:-1], linear)
        b_reader = _OperandReader(em, b, rank - 2, list(cols), thread[:-2] + thread[-1:], linear)
        step = max(a_reader.k_width, b_reader.k_width)
        em.lines.append(f"#pragma unroll {max(1, _K_PER_TRIP // step)}")
        em.open(f"for (int tt_k = 0; tt_k < {k_size}; {'++tt_k' if step == 1 else f'tt_k += {step}'})")
        a_values = a_reader.read("tt_k", step)
        b_values = b_reader.read("tt_k", step)
        acc_ty = result.type.scalar
        # k outermost: each accumulator still takes its products in k order
        for kk in range(step):
            for reg in unique:
                c = linear.register_coords(reg)
                update = _multiply_add(acc_ty, a_values[kk][c[:-1]], b_values[kk][c[:-2] + c[-1:]], f"{name}[{reg}]")
                em.line(f"{name}[{reg}] = {update};")
        em.close()
        first = {}
        for reg in range(linear.num_registers):
            c = linear.register_coords(reg)
            if c in first:
                em.line(f"{name}[{reg}] = {name}[{first[c]}];")
            else:
                first[c] = reg


def _thread_step(linear: LinearLayout, dim: int) -> int | None:
    """The largest power of two every thread's coordinate along `dim` is a
    multiple of (None: every thread's is 0)."""
    parts = [basis[dim] for basis in linear.lanes + linear.warps if basis[dim]]
    return min((part & -part for part in parts), default=None)


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


# Vector types a thread reads 16 (or 8) bytes of an operand with, by element type.
_VECTORS = {"float": ((4, "float4"), (2, "float2")), "double": ((2, "double2"),)}
_LANES = ("x", "y", "z", "w")


class _OperandReader:
    """Reads the operand tile's elements a thread needs at one k, or several k:
    at this thread's coordinates plus the constants `keys` (every dim but k, in
    order), as the compute type (fp32, fp64 or int).

    fp32 and fp64 tiles are read in 16-byte vectors where the tile allows it:
    along k when k is the tile's contiguous dim (`k_width` k at once), else
    across runs of keys consecutive along the contiguous dim whose first
    element is 16-byte aligned for every thread. Tiles start 128-byte aligned
    and their power-of-two rows are whole vectors. Dim d (not k) of the tile
    is dim d of the dot's result, whose layout is `linear`."""

    def __init__(self, em, tile, k_dim: int, keys: list[tuple[int, ...]], thread: list[str],
                 linear: LinearLayout):
        self.em = em
        self.tile = tile
        self.k_dim = k_dim
        self.keys = keys
        self.thread = thread
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
        self.dims = [d for d in range(rank) if d != k_dim]
        self.k_width, self.vector, self.groups = 1, None, None
        vectors = _VECTORS.get(ctype(self.ty), ()) if not self.ty.is_int() else ()
        if inner == k_dim:
            for width, vector in vectors:
                if self.geom.shape[k_dim] % width == 0:
                    self.k_width, self.vector = width, vector
                    break
        else:
            position = self.dims.index(inner)
            thread_step = _thread_step(linear, inner)
            for width, vector in vectors:
                groups = _runs(keys, position, width)
                if groups is not None and (thread_step is None or thread_step % width == 0):
                    self.vector, self.groups = vector, groups
                    break

    def read(self, k: str, count: int) -> list[dict[tuple[int, ...], str]]:
        """Define variables holding the elements at k, k + 1, ... k + count - 1 (a
        multiple of `k_width`); per k, the expression of each key's element."""
        values: list[dict[tuple[int, ...], str]] = [{} for _ in range(count)]
        for first in range(0, count, self.k_width):
            k_at = k if first == 0 else f"({k} + {first})"
            if self.k_width > 1:
                for key in self.keys:
                    name = self._load(key, k_at, self.vector)
                    for kk in range(self.k_width):
                        values[first + kk][key] = f"{name}.{_LANES[kk]}"
            elif self.groups is not None:
                for group in self.groups:
                    name = self._load(group[0], k_at, self.vector)
                    for lane, key in enumerate(group):
                        values[first][key] = f"{name}.{_LANES[lane]}"
            else:
                for key in self.keys:
                    values[first][key] = self._scalar(key, k_at)
        return values

    def _address(self, key: tuple[int, ...], k: str) -> str:
        terms = ["tt_smem", self.em.name(self.tile)]
        offset = 0
        for d, t, c in zip(self.dims, self.thread, key):
            if t != "0":
                terms.append(f"({t}) * {self.strides[d]}")
            offset += c * self.strides[d]
        if offset:
            terms.append(str(offset))
        terms.append(f"{k} * {self.strides[self.k_dim]}")
        return " + ".join(terms)

    def _load(self, key: tuple[int, ...], k: str, vector: str) -> str:
        name = self.em.fresh("tt_op")
        self.em.line(f"const {vector} {name} = *reinterpret_cast<const {vector}*>({self._address(key, k)});")
        return name

    def _scalar(self, key: tuple[int, ...], k: str) -> str:
        value = f"*reinterpret_cast<const {ctype(self.ty)}*>({self._address(key, k)})"
        name = self.em.fresh("tt_op")
        if self.ty.is_int():
            self.em.line(f"const int {name} = (int){value};")
        elif type_text(self.ty) == "fp64":
            self.em.line(f"const double {name} = {value};")
        else:
            self.em.line(f"const float {name} = {widen(value, self.ty)};")
        return name


def _runs(keys: list[tuple[int, ...]], position: int, width: int) -> list[list[tuple[int, ...]]] | None:
    """`keys` cut into runs of `width` keys consecutive at `position` (the first a
    multiple of `width`, the others equal), each in order; None if some key is in none."""
    present = set(keys)
    runs = []
    for key in keys:
        if key[position] % width:
            continue
        run = [key[:position] + (key[position] + i,) + key[position + 1:] for i in range(width)]
        if all(r in present for r in run):
            runs.append(run)
    return runs if len(runs) * width == len(present) else None


register(FmaDot())
