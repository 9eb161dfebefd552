"""Pointer blocks a loop advances by one uniform step a trip become their start
plus a scalar offset the loop carries.

`a_ptrs += BLOCK_K * stride_ak` at the end of a K loop (Triton's tutorials,
Inductor's templates) makes every address of the block a loop-carried 64-bit
value, updated in place each trip after the loads of the trip read it. Where
those loads are `cp.async` copies, which read their address registers late,
ptxas moves each address into one scratch register pair before its copy so
that the update may go ahead, and every copy waits until the one before it
has read that pair: the K loop of a 128x128x64 fp16 matmul with 4 warps ran
its 16 copies one after another (ncu: the moves stalled on the scoreboard, a
third of the loop's samples), 0.87x of upstream Triton's speed (0.97-0.98x
rewritten, on an H100).

Rewritten (a GPU pass, before the layout pass), the loop carries an i64
offset instead, starting at 0 and advanced by the step: the block is
`addptr(start, splat(offset))`, computed afresh each trip from the start,
which no trip changes. The addresses are the same 64-bit sums (the steps
are added in 64 bits, as each `addptr` did), so nothing but the register
traffic changes. Applies to a carried pointer block whose next value is
`addptr(itself, step)` where the step is a splat of a scalar integer or an
integer constant: the loop no longer carries the block, and after the loop
its final value is `addptr(start, splat(offset))` too.
"""

from __future__ import annotations

from ...ir.core import Builder, Module, Operation, Region, Value, replace_all_uses
from ...ir.types import block_type, int64


def run(module: Module, ctx=None) -> None:
    """Rewrite every uniformly stepped pointer block of `module`'s loops (see above)."""
    for fn in module.functions.values():
        for loop in [op for op in fn.walk() if op.name == "for"]:
            index = 0
            while index < len(loop.operands) - 3:
                step = _uniform_step(loop, index)
                if step is None:
                    index += 1
                else:  # the carried values after it move down one
                    loop = _rewrite(loop, index, step)


def _uniform_step(loop: Operation, index: int) -> Value | None:
    """The scalar integer (or integer splat constant) carried pointer block `index`
    of `loop` advances by each trip, or None where it is not such a block."""
    body: Region = loop.regions[0]
    arg = body.args[1 + index]
    if not arg.type.is_block() or not arg.type.scalar.is_ptr():
        return None
    advance = body.terminator.operands[index].defining_op
    if advance is None or advance.name != "addptr" or advance.parent is not body or advance.operands[0] is not arg:
        return None
    step = advance.operands[1].defining_op
    if step is None:
        return None
    if step.name == "splat" and step.operands[0].type.scalar.is_int():
        return step.operands[0]
    if step.name == "constant" and isinstance(step.attrs.get("value"), int) and not isinstance(
            step.attrs.get("value"), bool):
        return step.results[0]
    return None


def _rewrite(loop: Operation, index: int, step: Value) -> Operation:
    """`loop` made again with carried block `index` replaced by its offset (the last
    carried value); the new loop, in its place."""
    body: Region = loop.regions[0]
    arg = body.args[1 + index]
    start = loop.operands[3 + index]
    advance = body.terminator.operands[index].defining_op
    offsets_type = block_type(int64, list(arg.type.shape))
    parent: Region = loop.parent

    # the offset: 0 before the loop, advanced by the step where the block was
    before = Builder()
    before.set_insertion_point(parent, parent.ops.index(loop))
    before.loc = loop.loc
    zero = before.create_value("constant", [], int64, {"value": 0})
    offset = body.add_arg(int64, "offset")
    at = Builder()
    at.set_insertion_point(body, body.ops.index(advance) + 1)
    at.loc = advance.loc
    if step.type.is_block():  # an integer constant block
        amount = at.create_value("constant", [], int64, {"value": int(step.defining_op.attrs["value"])})
    elif step.type.scalar == int64:
        amount = step
    else:
        amount = at.create_value("cast", [step], int64, {})
    advanced = at.create_value("add", [offset, amount], int64, {})

    # the block each trip: the start plus the offset
    top = Builder()
    top.set_insertion_point(body, 0)
    top.loc = loop.loc
    block = top.create_value("addptr", [start, top.create_value("splat", [offset], offsets_type, {})], arg.type, {})
    replace_all_uses(body, arg, block)

    # the loop without the block, carrying the offset last
    terminator = body.terminator
    terminator.operands = [v for i, v in enumerate(terminator.operands) if i != index] + [advanced]
    if not any(advance.results[0] in op.operands for op in body.walk()):
        body.ops.remove(advance)
    body.args.remove(arg)
    for number, value in enumerate(body.args):
        value.index = number
    operands = [v for i, v in enumerate(loop.operands) if i != 3 + index] + [zero]
    result_types = [r.type for i, r in enumerate(loop.results) if i != index] + [int64]
    new = Operation("for", operands, result_types, dict(loop.attrs), [body], loop.loc)
    parent.insert(parent.ops.index(loop), new)
    parent.ops.remove(loop)
    kept = [r for i, r in enumerate(loop.results) if i != index]
    for old, value in zip(kept, new.results):
        replace_all_uses(parent, old, value)
    # after the loop: the final block from the final offset, where something reads it
    final = loop.results[index]
    if any(final in op.operands for op in parent.walk()):
        after = Builder()
        after.set_insertion_point(parent, parent.ops.index(new) + 1)
        after.loc = loop.loc
        last = after.create_value("addptr", [start, after.create_value("splat", [new.results[-1]], offsets_type, {})],
                                  arg.type, {})
        replace_all_uses(parent, final, last)
    return new
