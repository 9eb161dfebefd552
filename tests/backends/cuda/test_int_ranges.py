"""int_ranges.py: the interval an i32 value is proven to stay in, without wrapping
on the way, or None. Checked on the values a kernel stores (its IR as the GPU
passes receive it)."""

from __future__ import annotations

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.int_ranges import I32_MAX, int_range
from tritone.compiler import ASTSource
from tritone.compiler.compiler import make_ir


@triton.jit
def ranged(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for r in tl.range(0, 1000, 96):
        a = r + offs
        tl.store(out_ptr + offs, a)
        tl.store(out_ptr + offs, (a * 3) % 7)
        tl.store(out_ptr + offs, a // 4)
        tl.store(out_ptr + offs, offs & n)
        tl.store(out_ptr + offs, offs - 5)
        tl.store(out_ptr + offs, tl.program_id(0) + offs)
        tl.store(out_ptr + offs, tl.program_id(0) * BLOCK + offs)
        tl.store(out_ptr + offs, a * 4194304)
        tl.store(out_ptr + offs, n + offs)
        tl.store(out_ptr + offs, (n + offs) % 7)


def _stored_ranges(block: int) -> list:
    module = make_ir(ASTSource(ranged, {"out_ptr": "*i32", "n": "i32"}, {"BLOCK": block}),
                     GPUTarget("cuda", 90, 32), {"num_warps": 4})
    memo: dict = {}
    return [int_range(op.operands[1], memo) for op in module.kernel.walk() if op.name == "store"]


def test_ranges_of_aranges_trip_counters_and_arithmetic():
    assert _stored_ranges(128) == [
        (0, 960 + 127),          # the trip counter (0, 96, ..., 960) plus the arange
        (0, 6),                  # % of a non-negative value by a constant
        (0, (960 + 127) // 4),   # // likewise
        (0, 127),                # & a value that is not known: the arange bounds it
        (-5, 122),               # a subtraction may go below zero
        None,                    # program_id (up to 2^31 - 1) + 127 could wrap
        None,                    # program_id * BLOCK could wrap
        None,                    # 1087 * 2^22 wraps
        None,                    # a run-time argument is not bounded
        None,                    # nor its remainder, which may be negative
    ]


def test_program_id_is_never_negative():
    # with an arange of one value, program_id + 0 stays in [0, 2^31 - 1]
    assert _stored_ranges(1)[5] == (0, I32_MAX)
