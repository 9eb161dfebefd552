"""`acc + tl.dot(a, b)` as `tl.dot(a, b, acc)` for dots computed with FMAs.

`acc += tl.dot(a, b)` (Inductor's mm template, many hand-written kernels)
reaches the backend as `add(acc, dot(a, b, zeros))`: the dot sums its products
into fresh zeros, then the block is added to the accumulator. Upstream
Triton's combine pass rewrites this into `dot(a, b, acc)` on every path, so
the GPU accumulates the products straight into `acc` in k order; this pass
does the same for the dots `fma.py` computes. That saves one register per
accumulator element of each thread (the FMA dot's partial sums live beside
`acc` for the whole loop body), which decides how many CTAs fit on an SM, and
one add per element per loop trip. The fp32 result is then the one upstream's
FMA dot gives, bit for bit: the same fused multiply-adds in the same order.

The rewrite applies when the dot's accumulator is a float zero constant, the
dot's result feeds only the add, and the add's other operand has the dot's
type. It runs before the layout pass (the dot's implementation is chosen the
way the layout pass will choose it) and only in the GPU pipeline: the
interpreter still computes `acc + dot(a, b, 0)`.
"""

from __future__ import annotations

from collections import Counter

from tritone.ir.core import Module, Operation, Region, Value

from . import select


def run(module: Module, ctx=None) -> None:
    """Fold every `add(x, dot(a, b, 0))` of `module` whose dot runs on FMAs into `dot(a, b, x)`."""
    options = getattr(ctx, "options", None) or {}
    num_warps = int(module.attrs.get("num_warps", options.get("num_warps", 4)))
    target = int(options.get("target", 80))
    for fn in module.functions.values():
        uses = Counter(value for op in fn.walk() for value in op.operands)
        for op in list(fn.walk()):
            if op.name == "add":
                _fold(op, uses, target, num_warps)


def _fold(add: Operation, uses: Counter, target: int, num_warps: int) -> None:
    for index, value in enumerate(add.operands):
        dot = value.defining_op
        other = add.operands[1 - index]
        if (dot is None or dot.name != "dot" or dot.parent is not add.parent or uses[value] != 1
                or other.type != value.type or not _is_float_zero(dot.operands[2])
                or select(dot, target, num_warps).name != "fma"):
            continue
        region: Region = add.parent
        # The dot moves to the add's place: `other` may be computed between them.
        region.ops.remove(dot)
        region.ops[region.ops.index(add)] = dot
        uses[dot.operands[2]] -= 1
        dot.operands[2] = other
        _replace_uses(region, add.results[0], dot.results[0])
        uses[dot.results[0]] = uses.pop(add.results[0], 0)
        return


def _is_float_zero(value: Value) -> bool:
    op = value.defining_op
    return (op is not None and op.name == "constant" and value.type.scalar.is_floating()
            and op.attrs["value"] == 0.0)


def _replace_uses(region: Region, old: Value, new: Value) -> None:
    # `old` is defined in `region`: only its ops and the ops nested in them can read it.
    for op in region.walk():
        op.operands = [new if v is old else v for v in op.operands]
