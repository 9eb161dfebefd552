"""`tl.dot` on compute capability 7.5 (Turing) with its `mma.sync` shapes
(PTX_FACTS 1): fp16 as two m16n8k8 per m16n8k16 fragment tile, int8 as four
m8n8k16 per m16n8k32 tile (rows g and g + 8, k halves), fp8 converted
exactly to fp16 first. bf16 and tf32 have no Turing tensor-core instruction:
the FMA implementation takes them.
"""

from __future__ import annotations

from tritone.ir.core import Operation
from tritone.ir.types import type_text

from . import register
from .mma import Instruction, Issue, MmaDot, acc_kind, mma_helper
from .mma_v2 import fp8_via_f16

_FP8 = ("fp8e4nv", "fp8e5")


def f16_m16n8k8(acc: str) -> Issue:
    """An m16n8k16 fp16 fragment tile as two m16n8k8: a registers 0, 1 with b 0,
    then a 2, 3 with b 1 (the k halves)."""
    if acc == "f16":
        name, ptx = "tt_mma_m16n8k8_f16_f16", "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16"
    else:
        name, ptx = "tt_mma_m16n8k8_f32_f16", "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"

    def issue(em, c, a, b):
        fn = mma_helper(em, name, ptx, acc, 4, 2, 1)
        em.line(f"{fn}({', '.join(c + a[:2] + b[:1])});")
        em.line(f"{fn}({', '.join(c + a[2:] + b[1:])});")

    return issue


def s8_m8n8k16(em, c, a, b) -> None:
    """An m16n8k32 int8 fragment tile as four m8n8k16: accumulator rows g (c0, c1)
    from a registers 0 and 2, rows g + 8 (c2, c3) from 1 and 3."""
    fn = mma_helper(em, "tt_mma_m8n8k16_s32_s8", "mma.sync.aligned.m8n8k16.row.col.satfinite.s32.s8.s8.s32", "s32",
                    2, 1, 1)
    for c_pair, a_regs in ((c[:2], (a[0], a[2])), (c[2:], (a[1], a[3]))):
        for a_reg, b_reg in zip(a_regs, b):
            em.line(f"{fn}({', '.join(c_pair + [a_reg, b_reg])});")


class MmaTuring(MmaDot):
    name = "mma_turing"

    def instruction(self, op: Operation, target: int) -> Instruction | None:
        if not 75 <= target < 80:
            return None
        a, b, acc = op.operands
        ta, tb, tc = a.type.scalar, b.type.scalar, acc.type.scalar
        if type_text(ta) in _FP8 and type_text(tb) in _FP8 and type_text(tc) in ("fp32", "fp16"):
            return Instruction(4, fp8_via_f16(ta, tb, target, f16_m16n8k8(acc_kind(tc))))
        if ta != tb:
            return None
        if type_text(ta) == "fp16" and type_text(tc) in ("fp32", "fp16"):
            return Instruction(2, f16_m16n8k8(acc_kind(tc)))
        if type_text(ta) == "i8" and type_text(tc) == "i32":
            return Instruction(4, s8_m8n8k16)
        return None


register(MmaTuring())
