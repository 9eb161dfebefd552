"""`a*b + c` as one fused multiply-add, where upstream Triton's GPU code has one.

With `enable_fp_fusion` (the default), upstream compiles with LLVM's fast FP
contraction, and the NVPTX backend fuses aggressively (TRITON_SEMANTICS 7.2):
every float add or sub in the same basic block as a multiply that feeds it
becomes an fma, even when the product is used elsewhere too (it is then
computed twice: once rounded for the other uses, once inside the fma). NVRTC
fuses only a product with no other use, so `qk = s * dot(q, k)` followed by
`max(qk)` and `exp2(qk - m)` (the attention softmax) rounded `qk` before the
subtraction where upstream does not: other bits, and a longer dependency.

This pass makes upstream's choices in the IR, so the C++ states them:

- `mul(a, b) + z` and `z + mul(a, b)` become `fma(a, b, z)`;
- `mul(a, b) - z` becomes `fma(a, b, -z)`; `z - mul(a, b)` becomes `fma(-a, b, z)`;
- when both operands are products, the one with fewer uses is fused (the first on
  a tie), as LLVM's combiner prefers;
- fp32, fp64 and fp16 only: upstream's bf16 arithmetic is inline PTX that LLVM
  cannot fuse;
- the product must be in the same region (a basic block of upstream's code):
  a loop-invariant product outside a loop is not fused into the loop's adds.

A negation is `-0.0 - x`, exact for every x (NVRTC folds it into the fma's
operand). The products left without uses are deleted. Only the GPU pipeline runs
this; the interpreter rounds every operation, as upstream's does.
"""

from __future__ import annotations

from collections import Counter

from tritone.ir.core import Operation, Region, Value
from tritone.ir.types import type_text

PASS_NAME = "fp_contract"

_FUSED_TYPES = ("fp16", "fp32", "fp64")


def run(module, ctx=None) -> None:
    """Fuse the products feeding adds and subs of `module` (see the module
    docstring) unless the options say `enable_fp_fusion=False`."""
    if ctx is not None and not ctx.options.get("enable_fp_fusion", True):
        return
    for fn in module.functions.values():
        uses = Counter(value for op in fn.walk() for value in op.operands)
        for op in [op for op in fn.walk() if op.name in ("add", "sub") and _fusible_type(op.results[0])]:
            _contract(op, uses)


def _fusible_type(value: Value) -> bool:
    return type_text(value.type.scalar) in _FUSED_TYPES


def _product(value: Value, where: Region) -> Operation | None:
    op = value.defining_op
    if op is not None and op.name == "mul" and op.parent is where and op.results[0].type == value.type:
        return op
    return None


def _contract(op: Operation, uses: Counter) -> None:
    region: Region = op.parent
    x, y = op.operands
    left, right = _product(x, region), _product(y, region)
    if left is None and right is None:
        return
    # Which product to fuse: the only one, or the one with fewer uses (the first on a tie).
    fuse_right = left is None or (right is not None and uses[x] > uses[y])
    product = right if fuse_right else left
    a, b = product.operands
    addend = x if fuse_right else y
    if op.name == "sub":
        if fuse_right:  # x - a*b = fma(-a, b, x)
            a = _negated(region, op, a)
        else:  # a*b - y = fma(a, b, -y)
            addend = _negated(region, op, y)
    # The add becomes the fma in place: its result, and so its uses, stay.
    op.name, op.operands = "fma", [a, b, addend]
    for value in (x, y):
        uses[value] -= 1
    for value in op.operands:
        uses[value] += 1
    if uses[product.results[0]] == 0:
        region.ops.remove(product)
        for value in product.operands:
            uses[value] -= 1


def _negated(region: Region, before: Operation, value: Value) -> Value:
    """`-0.0 - value` (exactly `-value`), inserted into `region` before `before`."""
    zero = Operation("constant", [], [value.type], {"value": -0.0}, loc=before.loc)
    negation = Operation("sub", [zero.results[0], value], [value.type], loc=before.loc)
    index = region.ops.index(before)
    region.insert(index, zero)
    region.insert(index + 1, negation)
    return negation.results[0]
