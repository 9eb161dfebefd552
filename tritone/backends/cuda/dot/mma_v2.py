"""`tl.dot` on compute capability 8.0 and later with `mma.sync` (PTX_FACTS 1):
m16n8k16 for fp16 (fp32 or fp16 accumulator) and bf16, m16n8k8 for tf32
(three of them for tf32x3: the operands split into a tf32 part and the rest),
m16n8k32 for int8 (int32 sums that saturate, `.satfinite`, as Triton's) and, on
8.9 and later, for fp8 into fp32. fp8 dots elsewhere (older targets, an fp16
accumulator, and on Hopper blocks of fewer than 64 rows, which Triton gives
mma.sync in fp16 there, keeping native fp8 for wgmma's 64-row tiles) convert
the fragments to fp16, exactly, and use m16n8k16 (the k order inside a
fragment tile changes the same way in a and b, so the sum is unchanged).
"""

from __future__ import annotations

from tritone.ir.core import Operation
from tritone.ir.types import type_text

from . import register
from .mma import Instruction, Issue, MmaDot, acc_kind, convert_fp8_fragments, mma_helper

_FP8 = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}


def single(name: str, ptx: str, acc: str) -> Issue:
    """One instruction per fragment tile (a: 4 registers, b: 2)."""

    def issue(em, c, a, b):
        fn = mma_helper(em, name, ptx, acc, 4, 4, 2)
        em.line(f"{fn}({', '.join(c + a + b)});")

    return issue


def tf32x3(name: str, ptx: str) -> Issue:
    """Three tf32 products: small(a) big(b) + big(a) small(b) + big(a) big(b),
    big = the 19 bits the tensor core reads, small = the rest (exact in fp32)."""

    def split(em, regs):
        big, small = [], []
        for reg in regs:
            hi, lo = em.fresh("tt_big"), em.fresh("tt_small")
            em.line(f"const unsigned {hi} = {reg} & 0xffffe000u;")
            em.line(f"const unsigned {lo} = __float_as_uint(__uint_as_float({reg}) - __uint_as_float({hi}));")
            big.append(hi)
            small.append(lo)
        return big, small

    def issue(em, c, a, b):
        fn = mma_helper(em, name, ptx, "f32", 4, 4, 2)
        a_big, a_small = split(em, a)
        b_big, b_small = split(em, b)
        for x, y in ((a_small, b_big), (a_big, b_small), (a_big, b_big)):
            em.line(f"{fn}({', '.join(c + x + y)});")

    return issue


def fp8_via_f16(a_ty, b_ty, target: int, inner: Issue) -> Issue:
    """fp8 fragment tiles (k 32) as two fp16 fragment tiles issued by `inner`."""

    def issue(em, c, a, b):
        a_lo, a_hi = convert_fp8_fragments(em, a_ty, target, a)
        b_lo, b_hi = convert_fp8_fragments(em, b_ty, target, b)
        for half in (0, 1):
            inner(em, c, [a_lo[2 * half], a_lo[2 * half + 1], a_hi[2 * half], a_hi[2 * half + 1]],
                  [b_lo[half], b_hi[half]])

    return issue


def f16_m16n8k16(acc: str) -> Issue:
    if acc == "f16":
        return single("tt_mma_m16n8k16_f16_f16", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "f16")
    return single("tt_mma_m16n8k16_f32_f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "f32")


class MmaV2(MmaDot):
    name = "mma_v2"

    def instruction(self, op: Operation, target: int) -> Instruction | None:
        if target < 80:
            return None
        a, b, acc = op.operands
        ta, tb, tc = a.type.scalar, b.type.scalar, acc.type.scalar
        if type_text(ta) in _FP8 and type_text(tb) in _FP8:
            hopper_below_wgmma = target // 10 == 9 and acc.type.shape[-2] < 64
            if type_text(tc) == "fp32" and target >= 89 and not hopper_below_wgmma:
                ea, eb = _FP8[type_text(ta)], _FP8[type_text(tb)]
                return Instruction(4, single(f"tt_mma_m16n8k32_f32_{ea}_{eb}",
                                             f"mma.sync.aligned.m16n8k32.row.col.f32.{ea}.{eb}.f32", "f32"))
            if type_text(tc) in ("fp32", "fp16"):
                return Instruction(4, fp8_via_f16(ta, tb, target, f16_m16n8k16(acc_kind(tc))))
            return None
        if ta != tb:
            return None
        if type_text(ta) == "fp16" and type_text(tc) in ("fp32", "fp16"):
            return Instruction(2, f16_m16n8k16(acc_kind(tc)))
        if type_text(ta) == "bf16" and type_text(tc) == "fp32":
            return Instruction(2, single("tt_mma_m16n8k16_f32_bf16",
                                         "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "f32"))
        if type_text(ta) == "i8" and type_text(tc) == "i32":
            return Instruction(4, single("tt_mma_m16n8k32_s32_s8",
                                         "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", "s32"))
        if type_text(ta) == "fp32" and type_text(tc) == "fp32":
            precision = op.attrs.get("input_precision", "tf32")
            ptx = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
            if precision == "tf32":
                return Instruction(1, single("tt_mma_m16n8k8_f32_tf32", ptx, "f32"))
            if precision == "tf32x3":
                return Instruction(1, tf32x3("tt_mma_m16n8k8_f32_tf32", ptx))
        return None


register(MmaV2())
