"""Tensor-core dots with `mma.sync` m16n8 fragments: what 8.x (`mma_v2.py`) and
7.5 (`mma_turing.py`) share.

The result is an `NvidiaMmaLayout`: each warp owns 16x8 accumulator tiles
(PTX_FACTS 1.2). The work is split into *fragment tiles* of 16 (m) x 8 (n) x
8*k_width (k), k_width being the operand elements one 32-bit register holds
(2 for 16-bit types, 4 for 8-bit, 1 for fp32). A fragment tile's a operand is
four 32-bit registers, each an 8 (m) x 4*k_width (k) block at (0, 0), (8, 0),
(0, 4kw), (8, 4kw); its b operand two, 8 (n) x 4*k_width (k) blocks at k 0 and
4kw; lane l holds row `l >> 2` and k elements `kw*(l & 3) ...` of each block.
An instruction table (per target and dtype) turns one fragment tile into one
or more `mma` instructions.

Operands come from registers in the matching `DotOperandLayout`, or from a
shared tile: `ldmatrix` (x4: four blocks, one per 8 lanes' addresses) when
the tile's rows along k are 16-byte chunks, `ldmatrix.trans` when a 16-bit
tile is contiguous along m (n), element loads otherwise (8-bit and fp32 tiles
contiguous along m or n). Per k step, a warp loads the fragments of all its
m tiles and n tiles, then issues the mma of every pair.

A block smaller than one 16x8 tile (M < 16 or N < 8; K stays a multiple of
the instruction's) still uses the instruction, as Triton does: the layouts
wrap onto the block (coordinates modulo its shape), so the lanes past it hold
copies of its rows and columns, and the operand loads wrap the same way
(those lanes read the block's rows again). Every copy is computed from the
same operands, so the copies agree, and the result is the block's.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Callable

from tritone.ir.core import Operation
from tritone.ir.types import type_text

from ....ir.layouts import DistributedLayout, DotOperandLayout, LinearLayout, NvidiaMmaLayout, SwizzledSharedLayout
from ..codegen_base import CodegenError, bits_expr
from ..codegen_types import ctype
from . import DotImplementation
from .shared import (
    ThreadPart,
    TileGeometry,
    add_parts,
    is_shared_tile,
    operand_shared_layout,
    possible_bits,
    smem_address,
    tile_offset,
    tile_range,
)

# Fragment blocks of one fragment tile, (mn, k / (4*k_width)) per 32-bit register.
A_BLOCKS = ((0, 0), (8, 0), (0, 1), (8, 1))
B_BLOCKS = ((0, 0), (0, 1))

# Issues the mma instruction(s) of one fragment tile: (emitter, 4 accumulator
# element references, 4 a registers, 2 b registers).
Issue = Callable[[object, list[str], list[str], list[str]], None]


@dataclass(frozen=True)
class Instruction:
    """How one fragment tile is computed: `k_width` operand elements per 32-bit
    fragment register, and the function issuing its instructions."""

    k_width: int
    issue: Issue


def k_width_of(bits: int) -> int:
    return {8: 4, 16: 2, 32: 1}[bits]


def mma_warps(shape: tuple[int, ...], num_warps: int, chained: bool) -> tuple[int, ...]:
    """`warps_per_cta` of the accumulator: batch first, then M and N balanced so
    that a warp loads about as much of a as of b (Triton's rule); a chained dot
    puts every warp along M so each warp holds whole rows of its result."""
    rank = len(shape)
    batch = shape[0] if rank == 3 else 1
    warps_batch = min(num_warps, batch)
    left = num_warps // warps_batch
    m, n = shape[-2], shape[-1]
    if chained:
        wm = min(left, max(1, m // 16))
        warps = (wm, left // wm)
    else:
        warps_mn = [1, 1]
        reps = [max(1, m // 16), max(1, n // 8)]
        while warps_mn[0] * warps_mn[1] < left:
            if reps[0] >= reps[1]:
                warps_mn[0] *= 2
                if reps[0] != 1:
                    reps[0] //= 2
            else:
                warps_mn[1] *= 2
                reps[1] //= 2
        warps = tuple(warps_mn)
    return ((warps_batch,) if rank == 3 else ()) + warps


class MmaDot(DotImplementation):
    """A dot on `mma.sync` m16n8 fragments; subclasses give the instruction table."""

    @abstractmethod
    def instruction(self, op: Operation, target: int) -> Instruction | None:
        """The instruction for this op on `target`, or None when unsupported."""

    def supports(self, op: Operation, target: int) -> bool:
        a = op.operands[0]
        instr = self.instruction(op, target)
        if instr is None:
            return False
        return a.type.shape[-1] % (8 * instr.k_width) == 0

    def infer_layout(self, op: Operation, target: int, num_warps: int, chained: bool) -> DistributedLayout:
        shape = tuple(op.results[0].type.shape)
        rank = len(shape)
        return NvidiaMmaLayout((2, 0), mma_warps(shape, num_warps, chained), (1,) * (rank - 2) + (16, 8))

    def register_operand_layout(self, op: Operation, index: int,
                                result_layout: DistributedLayout) -> DotOperandLayout | None:
        if not isinstance(result_layout, NvidiaMmaLayout):
            return None
        bits = op.operands[index].type.scalar.primitive_bitwidth
        return DotOperandLayout(index, result_layout, k_width_of(bits))

    def shared_operand_layout(self, op: Operation, index: int, contiguous_dim: int) -> SwizzledSharedLayout:
        value = op.operands[index]
        return operand_shared_layout(index, tuple(value.type.shape), value.type.scalar.itemsize, contiguous_dim)

    def lower(self, op: Operation, em) -> None:
        instr = self.instruction(op, em.target)
        if instr is None:
            raise CodegenError(f"{self.name} cannot compute the dot at {op.loc}")
        _Lowering(em, op, instr).run()


class _Lowering:
    def __init__(self, em, op: Operation, instr: Instruction):
        self.em = em
        self.op = op
        self.instr = instr
        self.result = op.results[0]
        if not isinstance(self.result.type.layout, NvidiaMmaLayout):
            raise CodegenError(f"mma dot at {op.loc}: result layout {self.result.type.layout} is not an mma layout")
        self.linear = em.linear(self.result)

    def run(self) -> None:
        em, op = self.em, self.op
        a, b, acc = op.operands
        name = em.define_block(self.result)
        em.copy(name, em.name(acc), acc)
        kw = self.instr.k_width
        k_step = 8 * kw
        a_src = OperandSource(em, a, 0, self.linear, kw)
        b_src = OperandSource(em, b, 1, self.linear, kw)
        for src in (a_src, b_src):
            src.note_reads()
        tiles = []
        for reg in range(0, self.linear.num_registers, 4):
            tiles.append((self.linear.register_coords(reg), reg))
        depth = a.type.shape[-1]
        chunk = self._imprecise_chunk(k_step)
        target, count = name, self.em.nregs(self.result)
        for k0 in range(0, depth, k_step):
            if chunk and k0 % chunk == 0:
                # Hopper's fp8 dots sum `max_num_imprecise_acc` products of K at a time
                # apart, then add the partial sum into the fp32 accumulator, as Triton does.
                target = em.fresh("tt_part")
                em.line(f"{ctype(self.result.type.scalar)} {target}[{count}];")
                em.for_registers(count, f"{target}[i] = 0.0f;")
            a_frags: dict[tuple, list[str]] = {}
            for coords, _ in tiles:
                key = coords[:-2] + (coords[-2],)
                if key not in a_frags:
                    a_frags[key] = a_src.load(coords[:-2], coords[-2], k0)[0]
            b_frags: dict[tuple, list[str]] = {}
            by_batch: dict[tuple, list[int]] = {}
            for coords, _ in tiles:
                ns = by_batch.setdefault(coords[:-2], [])
                if coords[-1] not in ns:
                    ns.append(coords[-1])
            for batch, ns in by_batch.items():
                for n0, regs in b_src.load_columns(batch, sorted(ns), k0).items():
                    b_frags[batch + (n0,)] = regs
            for coords, reg in tiles:
                c = [f"{target}[{reg + i}]" for i in range(4)]
                self.instr.issue(em, c, a_frags[coords[:-2] + (coords[-2],)], b_frags[coords[:-2] + (coords[-1],)])
            if chunk and ((k0 + k_step) % chunk == 0 or k0 + k_step >= depth):
                em.for_registers(count, f"{name}[i] += {target}[i];")

    def _imprecise_chunk(self, k_step: int) -> int | None:
        """How many products of K an fp8 dot on sm_90 sums apart before adding them
        into the accumulator (its `max_num_imprecise_acc`, a multiple of the
        instruction's K), or None when it accumulates directly."""
        a, b, _ = self.op.operands
        limit = self.op.attrs.get("max_num_imprecise_acc") or 0
        hopper_fp8 = a.type.scalar.is_fp8() and b.type.scalar.is_fp8() and self.em.target // 10 == 9
        if not hopper_fp8 or not 0 < limit <= a.type.shape[-1]:
            return None
        return max(k_step, limit - limit % k_step)


class OperandSource:
    """Fragment registers of one dot operand, from registers or a shared tile."""

    def __init__(self, em, value, index: int, result_linear: LinearLayout, kw: int):
        self.em = em
        self.value = value
        self.index = index
        self.kw = kw
        self.rank = len(value.type.shape)
        self.mn_dim = self.rank - 2 if index == 0 else self.rank - 1
        self.k_dim = self.rank - 1 if index == 0 else self.rank - 2
        self.ty = value.type.scalar
        self.blocks = A_BLOCKS if index == 0 else B_BLOCKS
        # the result dim each operand dim follows (k follows none)
        result_dim = {d: d for d in range(self.rank - 2)}
        result_dim[self.mn_dim] = self.rank - 2 if index == 0 else self.rank - 1
        self.warp = {}
        for d in range(self.rank):
            if d == self.k_dim:
                self.warp[d] = ThreadPart("0", 0)
                continue
            bases = [w[result_dim[d]] for w in result_linear.warps]
            self.warp[d] = ThreadPart(_warp_coord(em, bases), possible_bits(bases))
        if is_shared_tile(value):
            self.geom = TileGeometry(value.type.layout, tuple(value.type.shape), self.ty.itemsize)
            self.mode = self._shared_mode()
            self.registers = None
        else:
            if not isinstance(value.type.layout, DotOperandLayout):
                raise CodegenError(f"dot operand {index} of type {value.type} is neither a shared tile nor in a "
                                   "dot operand layout")
            self.mode = "registers"
            linear = em.linear(value)
            self.registers = {}
            for reg in range(linear.num_registers):
                self.registers.setdefault(linear.register_coords(reg), reg)

    def _shared_mode(self) -> str:
        geom, eb = self.geom, self.ty.itemsize
        rows_ok = (geom.layout.vec * eb >= 16) if geom.swizzled else (geom.row_bytes % 16 == 0)
        if geom.inner == self.k_dim and rows_ok:
            return "ldmatrix"
        if geom.inner == self.mn_dim and eb == 2 and rows_ok:
            return "ldmatrix_trans"
        return "elements"

    def note_reads(self) -> None:
        if self.mode != "registers":
            start, end = tile_range(self.value)
            self.em.shared_access(start, end, False)

    # -- loading --------------------------------------------------------------------
    def load(self, batch: tuple[int, ...], mn0: int, k0: int, apart: int = 0) -> list[list[str]]:
        """The fragment registers of the fragment tile at (mn0, k0), and with
        `apart` also of the one at mn0 + apart (b only: one ldmatrix.x4 loads two)."""
        tiles = [0, apart] if apart else [0]
        blocks = [(mn + t, kb) for t in tiles for mn, kb in self.blocks]
        if self.mode == "registers":
            regs = [self._packed_from_registers(batch, mn0 + mn, k0 + kb * 4 * self.kw) for mn, kb in blocks]
        elif self.mode == "elements":
            regs = [self._packed_from_elements(batch, mn0 + mn, k0 + kb * 4 * self.kw) for mn, kb in blocks]
        else:
            regs = self._ldmatrix(batch, mn0, k0, len(blocks), apart)
        per = len(self.blocks)
        return [regs[i * per:(i + 1) * per] for i in range(len(tiles))]

    def load_columns(self, batch: tuple[int, ...], ns: list[int], k0: int) -> dict[int, list[str]]:
        """b fragments of the n tiles `ns`, two by one ldmatrix.x4 where their
        distance is a power of two the thread's and the first tile's n do not use."""
        out: dict[int, list[str]] = {}
        warp_bits = self.warp[self.mn_dim].bits
        i = 0
        while i < len(ns):
            n0 = ns[i]
            apart = ns[i + 1] - n0 if i + 1 < len(ns) else 0
            if (self.mode.startswith("ldmatrix") and apart >= 8 and apart & (apart - 1) == 0
                    and not n0 & apart and not warp_bits & apart):
                out[n0], out[n0 + apart] = self.load(batch, n0, k0, apart)
                i += 2
            else:
                out[n0] = self.load(batch, n0, k0)[0]
                i += 1
        return out

    def _coords(self, batch: tuple[int, ...], mn: int, k: int) -> tuple[int, ...]:
        coords = list(batch) + [0, 0]
        coords[self.mn_dim] = mn % self.value.type.shape[self.mn_dim]
        coords[self.k_dim] = k
        return tuple(coords)

    def _wrapped(self, lane_mn: ThreadPart) -> ThreadPart:
        """`lane_mn` (lane bits 0-7) modulo an M (N) smaller than 8: lanes past the
        block read its rows again, as the result's layout replicates them."""
        size = self.value.type.shape[self.mn_dim]
        if size >= 8:
            return lane_mn
        if size == 1:
            return ThreadPart("0", 0)
        return ThreadPart(f"({lane_mn.expr} & {size - 1})", size - 1)

    def _mn_basis(self, mn: int) -> int:
        """A lane basis along M (N) modulo the block: past a smaller block it wraps to 0."""
        return mn if mn < self.value.type.shape[self.mn_dim] else 0

    def _packed_from_registers(self, batch: tuple[int, ...], mn: int, k: int) -> str:
        name = self.em.name(self.value)
        parts = []
        for e in range(self.kw):
            coords = self._coords(batch, mn, k + e)
            reg = self.registers.get(coords)
            if reg is None:
                raise CodegenError(f"dot operand {self.index}: no register holds element {coords}")
            parts.append(_element_bits(self.ty, f"{name}[{reg}]"))
        return _pack(parts, self.ty.primitive_bitwidth)

    def _packed_from_elements(self, batch: tuple[int, ...], mn: int, k: int) -> str:
        em = self.em
        lane_mn = self._wrapped(ThreadPart("(tt_lane >> 2)", 7))
        lane_k = ThreadPart(f"((tt_lane & 3) * {self.kw})" if self.kw > 1 else "(tt_lane & 3)", 3 * self.kw)
        thread = self._thread_parts(lane_mn, lane_k)
        bits = self.ty.primitive_bitwidth
        word = {8: "unsigned char", 16: "unsigned short", 32: "unsigned"}[bits]
        parts = []
        for e in range(self.kw):
            offset = tile_offset(em, self.geom, thread, self._coords(batch, mn, k + e))
            parts.append(f"*reinterpret_cast<const {word}*>(tt_smem + {em.name(self.value)} + {offset})")
        name = em.fresh("tt_fe")
        em.line(f"const unsigned {name} = {_pack(parts, bits)};")
        return name

    def _thread_parts(self, lane_mn: ThreadPart, lane_k: ThreadPart) -> list[ThreadPart]:
        parts = []
        for d in range(self.rank):
            if d == self.mn_dim:
                parts.append(add_parts(lane_mn, self.warp[d]))
            elif d == self.k_dim:
                parts.append(lane_k)
            else:
                parts.append(self.warp[d])
        return parts

    def _ldmatrix(self, batch: tuple[int, ...], mn0: int, k0: int, count: int, apart: int) -> list[str]:
        em = self.em
        kb = 4 * self.kw
        trans = self.mode == "ldmatrix_trans"
        rows = [(0, 1), (0, 2), (0, 4)] if trans else [(1, 0), (2, 0), (4, 0)]
        # lanes 8q..8q+7 address block q (PTX_FACTS 2); x2 repeats lanes 0-15 in 16-31
        if self.index == 0:
            q = [(8, 0), (0, kb)]
        elif count == 4:
            q = [(0, kb), (apart, 0)]
        else:
            q = [(0, kb), (0, 0)]
        lane_bases = rows + q
        lane_mn = [self._mn_basis(b[0]) for b in lane_bases]
        lane_k = [b[1] for b in lane_bases]
        thread = self._thread_parts(ThreadPart(bits_expr(lane_mn, "tt_lane"), possible_bits(lane_mn)),
                                    ThreadPart(bits_expr(lane_k, "tt_lane"), possible_bits(lane_k)))
        offset = tile_offset(em, self.geom, thread, self._coords(batch, mn0, k0))
        address = f"{smem_address(em)} + {em.name(self.value)} + {offset}"
        name = em.fresh("tt_frag")
        em.line(f"unsigned {name}[{count}];")
        helper = _ldmatrix_helper(em, count, trans)
        em.line(f"{helper}({', '.join(f'{name}[{i}]' for i in range(count))}, {address});")
        return [f"{name}[{i}]" for i in range(count)]


def _warp_coord(em, bases: list[int]) -> str:
    """A per-thread variable holding the coordinate the warp's bases give."""
    expr = bits_expr(bases, "tt_warp")
    if expr == "0":
        return "0"
    names = em.memo.setdefault("warp_coords", {})
    if expr not in names:
        name = f"tt_wc{len(names)}"
        em.prologue.append(f"const int {name} = {expr};")
        names[expr] = name
    return names[expr]


def _element_bits(ty, ref: str) -> str:
    if type_text(ty) in ("fp16", "bf16", "fp8e4nv", "fp8e5"):
        return f"{ref}.bits"
    if type_text(ty) == "fp32":
        return f"__float_as_uint({ref})"
    if ty.is_int():
        return f"(unsigned char){ref}"
    raise CodegenError(f"mma operands of type {ty}")


def _pack(parts: list[str], bits: int) -> str:
    """One 32-bit word holding `parts` (each `bits` wide), the first in the low bits."""
    if len(parts) == 1:
        return f"(unsigned)({parts[0]})"
    terms = [f"((unsigned)({p}) << {i * bits})" if i else f"(unsigned)({p})" for i, p in enumerate(parts)]
    return "(" + " | ".join(terms) + ")"


def _ldmatrix_helper(em, count: int, trans: bool) -> str:
    name = f"tt_ldmatrix_x{count}{'_trans' if trans else ''}"
    outs = ", ".join(f"unsigned& r{i}" for i in range(count))
    regs = ", ".join(f"%{i}" for i in range(count))
    constraints = ", ".join(f'"=r"(r{i})' for i in range(count))
    em.declare_once(
        f"static __device__ __forceinline__ void {name}({outs}, unsigned address) {{\n"
        f'  asm volatile("ldmatrix.sync.aligned.m8n8.x{count}{".trans" if trans else ""}.shared.b16 '
        f'{{{regs}}}, [%{count}];" : {constraints} : "r"(address) : "memory");\n'
        "}")
    return name


def mma_helper(em, name: str, ptx: str, acc_ty: str, c_count: int, a_count: int, b_count: int) -> str:
    """Declare (once) a device function `name(c..., a..., b...)` issuing `ptx` (the
    instruction without operands) with the accumulator in place. `acc_ty`: `f32`
    (float&), `s32` (int&) or `f16` (tt_f16&, two per 32-bit register)."""
    c_params = {"f32": "float&", "s32": "int&", "f16": "tt_f16&"}[acc_ty]
    params = [f"{c_params} c{i}" for i in range(c_count)]
    params += [f"unsigned a{i}" for i in range(a_count)] + [f"unsigned b{i}" for i in range(b_count)]
    body = []
    if acc_ty == "f16":
        regs = c_count // 2
        body.append("  unsigned " + ", ".join(f"d{i} = (unsigned)c{2 * i}.bits | ((unsigned)c{2 * i + 1}.bits << 16)"
                                               for i in range(regs)) + ";")
        outs = [f'"+r"(d{i})' for i in range(regs)]
    else:
        regs = c_count
        outs = [f'"+{"f" if acc_ty == "f32" else "r"}"(c{i})' for i in range(regs)]
    d = ", ".join(f"%{i}" for i in range(regs))
    a = ", ".join(f"%{regs + i}" for i in range(a_count))
    b = ", ".join(f"%{regs + a_count + i}" for i in range(b_count))
    ins = [f'"r"(a{i})' for i in range(a_count)] + [f'"r"(b{i})' for i in range(b_count)]
    body.append(f'  asm("{ptx} {{{d}}}, {{{a}}}, {{{b}}}, {{{d}}};" : {", ".join(outs)} : {", ".join(ins)});')
    if acc_ty == "f16":
        for i in range(c_count // 2):
            body.append(f"  c{2 * i}.bits = (unsigned short)d{i}; c{2 * i + 1}.bits = (unsigned short)(d{i} >> 16);")
    em.declare_once(f"static __device__ __forceinline__ void {name}({', '.join(params)}) {{\n" + "\n".join(body)
                    + "\n}")
    return name


def acc_kind(ty) -> str:
    """The mma accumulator kind of an IR element type."""
    return {"fp32": "f32", "i32": "s32", "fp16": "f16"}[type_text(ty)]


def fp8_to_f16_helper(em, ty, target: int) -> str:
    """Declare (once) `name(x, lo, hi)`: four fp8 values of `ty` packed in `x` as two
    f16x2 words (bytes 0, 1 in `lo`, 2, 3 in `hi`), exactly."""
    if type_text(ty) == "fp8e5":
        # e5m2 is the high byte of an fp16.
        name = "tt_e5m2x4_to_f16x4"
        body = ('  asm("prmt.b32 %0, %1, 0, 0x1404;" : "=r"(lo) : "r"(x));\n'
                '  asm("prmt.b32 %0, %1, 0, 0x3424;" : "=r"(hi) : "r"(x));')
    elif target >= 89:
        name = "tt_e4m3x4_to_f16x4"
        body = ('  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.rn.f16x2.e4m3x2 %0, l; '
                'cvt.rn.f16x2.e4m3x2 %1, h; }" : "=r"(lo), "=r"(hi) : "r"(x));')
    else:
        name = "tt_e4m3x4_to_f16x4"
        convert = ("tt_f32_to_f16(tt_fp8e4nv_to_f32(tt_fp8e4nv{(unsigned char)(x >> %d)})).bits")
        body = (f"  lo = (unsigned){convert % 0} | ((unsigned){convert % 8} << 16);\n"
                f"  hi = (unsigned){convert % 16} | ((unsigned){convert % 24} << 16);")
    em.declare_once(f"static __device__ __forceinline__ void {name}(unsigned x, unsigned& lo, unsigned& hi) {{\n"
                    f"{body}\n}}")
    return name


def convert_fp8_fragments(em, ty, target: int, regs: list[str]) -> tuple[list[str], list[str]]:
    """f16x2 words (low halves, high halves) of fp8 fragment registers `regs`."""
    helper = fp8_to_f16_helper(em, ty, target)
    los, his = [], []
    for reg in regs:
        lo, hi = em.fresh("tt_h"), em.fresh("tt_h")
        em.line(f"unsigned {lo}, {hi};")
        em.line(f"{helper}({reg}, {lo}, {hi});")
        los.append(lo)
        his.append(hi)
    return los, his
