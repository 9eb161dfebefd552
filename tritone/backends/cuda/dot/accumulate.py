"""`acc + tl.dot(a, b)` as `tl.dot(a, b, acc)`, as upstream Triton's combine
pass rewrites it on every path.

`acc += tl.dot(a, b)` (Inductor's mm template, many hand-written kernels)
reaches the backend as `add(acc, dot(a, b, zeros))`: the dot sums its products
into fresh zeros, then the block is added to the accumulator. Rewritten, the
GPU accumulates the products straight into `acc`. On the FMA path that saves
one register per accumulator element of each thread (the partial sums live
beside `acc` for the whole loop body), which decides how many CTAs fit on an
SM, and one add per element per loop trip; the fp32 result is then the one
upstream's FMA dot gives, bit for bit (the same fused multiply-adds in the
same order). On the tensor-core paths the sums are those upstream's give,
and a wgmma dot can accumulate in place and stay in flight over its loop
(`pipeline.py`).

The rewrite applies, as upstream's, when the dot's accumulator is a zero
constant, the dot's result feeds only the add, the add's other operand has
the dot's type, and for float dots `max_num_imprecise_acc` is 0 (fp8 dots
that promote partial sums keep their own). It runs before the layout pass and
only in the GPU pipeline: the interpreter computes `acc + dot(a, b, 0)`, as
upstream's does.
"""

from __future__ import annotations

from collections import Counter

from tritone.ir.core import Module, Operation, Region, replace_all_uses
from tritone.ir.ops import is_zero_constant


def run(module: Module, ctx=None) -> None:
    """Fold every `add(x, dot(a, b, 0))` of `module` into `dot(a, b, x)` (see the module docstring)."""
    for fn in module.functions.values():
        uses = Counter(value for op in fn.walk() for value in op.operands)
        for op in list(fn.walk()):
            if op.name == "add":
                _fold(op, uses)


def _fold(add: Operation, uses: Counter) -> None:
    for index, value in enumerate(add.operands):
        dot = value.defining_op
        other = add.operands[1 - index]
        if (dot is None or dot.name != "dot" or dot.parent is not add.parent or uses[value] != 1
                or other.type != value.type or not is_zero_constant(dot.operands[2])
                or (value.type.scalar.is_floating() and dot.attrs.get("max_num_imprecise_acc"))):
            continue
        region: Region = add.parent
        # The dot moves to the add's place: `other` may be computed between them.
        region.ops.remove(dot)
        region.ops[region.ops.index(add)] = dot
        uses[dot.operands[2]] -= 1
        dot.operands[2] = other
        replace_all_uses(region, add.results[0], dot.results[0])
        uses[dot.results[0]] = uses.pop(add.results[0], 0)
        return
